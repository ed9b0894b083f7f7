package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestReference(t *testing.T) {
	t.Parallel()
	const label = "operator API writes per cluster to form it (events included, lease renewals left out)"
	section := func(n int, value, target string) string {
		return beginMarker + "\n## Scale (envtest, etcd simulator, real etcd client)\n\n" +
			"Written by `make bench-scale` on 2026-12-07 18:34 UTC; one run with N = " + strconv.Itoa(n) + " clusters of one member each and 4 shards; x.\n\n" +
			"| measurement | value | last round | target | met? |\n|---|---|---|---|---|\n" +
			"| " + label + " | " + value + " |  | " + target + " |  |\n" + endMarker + "\n"
	}
	tests := []struct {
		name    string
		file    string
		n       int
		wantOK  bool
		wantV   float64
		wantAt  int
		wantCol string
	}{
		{name: "no previous section", file: "", n: 10000},
		{name: "previous at another N", file: section(1000, "21.0", ""), n: 10000, wantOK: true, wantV: 21.0, wantAt: 1000, wantCol: "<= 21.0 (as at N = 1000)"},
		{name: "previous at the same N carries its reference", file: section(10000, "20.4", "<= 21.0 (as at N = 1000)"), n: 10000, wantOK: true, wantV: 21.0, wantAt: 1000, wantCol: "<= 21.0 (as at N = 1000)"},
		{name: "previous at the same N without a reference", file: section(1000, "21.0", ""), n: 1000},
		{name: "a carried reference of this N is none", file: section(10000, "20.4", "<= 21.0 (as at N = 1000)"), n: 1000, wantOK: true, wantV: 20.4, wantAt: 10000, wantCol: "<= 20.4 (as at N = 10000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "RESULTS.md")
			if tt.file != "" {
				if err := os.WriteFile(path, []byte(tt.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			v, at, ok := readPrevious(path).reference(label, tt.n)
			if ok != tt.wantOK || v != tt.wantV || at != tt.wantAt {
				t.Fatalf("reference = %v, %d, %v; want %v, %d, %v", v, at, ok, tt.wantV, tt.wantAt, tt.wantOK)
			}
			if ok {
				if got := referenceTarget(v, at); got != tt.wantCol {
					t.Fatalf("target cell %q, want %q", got, tt.wantCol)
				}
			}
		})
	}
}

func TestSplitRowsByReplicas(t *testing.T) {
	t.Parallel()
	// A round with another number of replicas has rows of its own.
	two := rowKey("heap in use per replica, " + inWords(2) + " replicas, and its ratio to one replica alone (126.8 MiB)")
	four := rowKey("heap in use per replica, " + inWords(4) + " replicas, and its ratio to one replica alone (1268.0 MiB)")
	if two == four {
		t.Fatalf("two and four replicas share the row key %q", two)
	}
	if got := replicaNames(28); got[0] != "a" || got[25] != "z" || got[26] != "r27" {
		t.Fatalf("replicaNames(28) = %v", got)
	}
}

func TestPerThousand(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n    int
		want time.Duration
	}{{200, 6 * time.Minute}, {1000, 6 * time.Minute}, {2000, 12 * time.Minute}, {10000, time.Hour}} {
		if got := perThousand(6*time.Minute, tt.n); got != tt.want {
			t.Errorf("perThousand(6m, %d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}
