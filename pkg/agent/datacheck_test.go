package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/raftsman/raftsman/pkg/gate"
)

func TestCheckData(t *testing.T) {
	t.Parallel()
	mine := Marker{Member: "demo-abcde", UID: "uid-1"}
	for _, tc := range []struct {
		name       string
		marker     *Marker // on disk before the check; nil: none
		data       bool    // the data directory holds a member folder
		firstPod   bool
		wantReason string // "" : allowed
		wantMarker bool   // a marker of this member exists afterwards
	}{
		{name: "first start of a new member", firstPod: true, wantMarker: true},
		{name: "first start of a restored member", firstPod: true, data: true, wantMarker: true},
		{name: "restart with its data", marker: &mine, data: true, wantMarker: true},
		{name: "restart on an emptied volume", marker: &mine, wantReason: ReasonDataLost, wantMarker: true},
		{name: "first Pod again after its tmpfs was wiped", marker: &mine, firstPod: true, wantReason: ReasonDataLost, wantMarker: true},
		{name: "later Pod on a recreated empty volume", wantReason: ReasonDataLost},
		{name: "member made before markers, with data", data: true, wantMarker: true},
		{name: "another member's volume", marker: &Marker{Member: "demo-zzzzz", UID: "uid-2"}, data: true, wantReason: ReasonForeignData},
		{name: "same name, another EtcdMember", marker: &Marker{Member: "demo-abcde", UID: "uid-old"}, data: true, wantReason: ReasonForeignData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dataDir, markerPath := filepath.Join(root, "data"), filepath.Join(root, "raftsman-member.json")
			if tc.data {
				if err := os.MkdirAll(filepath.Join(dataDir, "member", "wal"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if tc.marker != nil {
				if err := writeMarker(markerPath, *tc.marker); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"--data-dir=" + dataDir, "--marker=" + markerPath, "--member=" + mine.Member, "--uid=" + mine.UID}
			if tc.firstPod {
				args = append(args, "--first-pod")
			}
			err := checkData(context.Background(), args, &Result{})
			var f failure
			switch {
			case tc.wantReason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantReason != "" && (!errors.As(err, &f) || f.reason != tc.wantReason):
				t.Fatalf("got %v, want a %s refusal", err, tc.wantReason)
			}
			got, found, rerr := readMarker(markerPath)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if (found && got == mine) != tc.wantMarker {
				t.Errorf("marker afterwards %+v (found %v), want this member's: %v", got, found, tc.wantMarker)
			}
		})
	}
}

func TestInstallGate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		withSmall bool
		want      string
	}{
		{"the small binary next to this one", true, "small"},
		{"an image without it: this binary, run under the gate's name", false, "whole"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			self := filepath.Join(dir, "raftsman")
			if err := os.WriteFile(self, []byte("whole"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.withSmall {
				if err := os.WriteFile(filepath.Join(dir, gate.Name), []byte("small"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			to := filepath.Join(t.TempDir(), gate.Name)
			if err := installGateFrom(self, to); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(to)
			if err != nil || string(b) != tt.want {
				t.Fatalf("installed %q (%v), want %q", b, err, tt.want)
			}
			if st, err := os.Stat(to); err != nil || st.Mode().Perm()&0o111 == 0 {
				t.Fatalf("installed gate not executable: %v %v", st.Mode(), err)
			}
		})
	}
}
