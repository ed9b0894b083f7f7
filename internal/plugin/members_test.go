package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestMembersAndSnapshot: members joins etcd's member list with the
// EtcdMembers; snapshot saves a checked snapshot, and nothing when the
// check fails.
func TestMembersAndSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(existing, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantSnapshot := func(file string) func(*testing.T, *testEnvironment) {
		return func(t *testing.T, te *testEnvironment) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			if !strings.HasPrefix(string(data), "etcdetcd") || !strings.Contains(te.out.String(), "sha256 "+hex.EncodeToString(sum[:])) {
				t.Errorf("%s holds %d bytes, sha256 %x; output %s", file, len(data), sum, te.out)
			}
			if _, err := os.Stat(file + ".part"); !os.IsNotExist(err) {
				t.Errorf("%s.part left behind (%v)", file, err)
			}
		}
	}
	noFile := func(file string) func(*testing.T, *testEnvironment) {
		return func(t *testing.T, _ *testEnvironment) {
			for _, f := range []string{file, file + ".part"} {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					t.Errorf("%s exists (%v)", f, err)
				}
			}
		}
	}
	runVerbCases(t, []verbCase{
		{name: "members", args: []string{"members", "sample"}, wantOut: []string{
			"NAME          ID  ROLE   LEADER  PEER URL                                        POD    HEALTHY\n",
			"sample-aaaaa  a1  Voter  *       https://sample-aaaaa.sample-peer.prod.svc:2380  Ready  yes\n",
			"sample-ccccc  c3  Voter          https://sample-ccccc.sample-peer.prod.svc:2380  Ready  yes\n"},
			notOut: []string{"  sample-"}},
		{name: "members etcd and the operator disagree on", args: []string{"members", "sample"},
			extra: []client.Object{etcdMember("sample-ddddd", "")},
			etcd: func(f *fakeEtcd) {
				f.members = append(f.members, listedMember{ID: 0xee, Name: "stranger", PeerURLs: []string{"https://10.0.0.9:2380"}}, listedMember{ID: 0xf0, IsLearner: true})
			},
			wantOut: []string{"(unstarted)   f0  Learner",
				"sample-ddddd  -   Voter            -                                               none   no\n",
				"stranger      ee  Voter            https://10.0.0.9:2380  ",
				"  stranger: no EtcdMember: not the operator's, or being removed\n",
				"  sample-ddddd: not in etcd's member list: being added, or removed\n"}},
		{name: "members without etcd", args: []string{"members", "sample"}, etcd: func(f *fakeEtcd) { f.statuses = map[string]memberStatus{} },
			wantOut: []string{"sample-bbbbb  b2  Voter", "  etcd's member list: no member answered: sample-aaaaa: context deadline exceeded"}},
		{name: "members -o yaml without etcd", args: []string{"members", "sample", "-o", "yaml"}, etcd: func(f *fakeEtcd) { f.statuses = map[string]memberStatus{} },
			wantOut: []string{"- etcdMember: true\n"}, wantErrOut: []string{"note: etcd's member list: no member answered"}},
		{name: "members -o json", args: []string{"members", "sample", "-o", "json"},
			check: func(t *testing.T, te *testEnvironment) {
				var rows []memberListRow
				if err := json.Unmarshal(te.out.Bytes(), &rows); err != nil || len(rows) != 3 || !rows[0].Leader || !rows[1].InEtcd || !rows[2].EtcdMember {
					t.Errorf("members -o json: %v, %+v", err, rows)
				}
			}},

		{name: "snapshot from a member that does not lead", args: []string{"snapshot", "sample", filepath.Join(dir, "a.db")},
			wantOut: []string{"snapshot of prod/sample from sample-bbbbb (etcd 3.6.16, revision 1234) saved to " + filepath.Join(dir, "a.db") + ": 8.0 KiB (8224 bytes)",
				"etcd's checksum matches"},
			check: wantSnapshot(filepath.Join(dir, "a.db"))},
		{name: "snapshot from --member", args: []string{"snapshot", "sample", filepath.Join(dir, "b.db"), "--member", "sample-aaaaa"},
			wantOut: []string{"from sample-aaaaa"}, check: wantSnapshot(filepath.Join(dir, "b.db"))},
		{name: "snapshot damaged", args: []string{"snapshot", "sample", filepath.Join(dir, "c.db")}, etcd: func(f *fakeEtcd) { f.badSnapshot = true },
			wantErr: "the sha256 etcd appended does not match the data: the snapshot is damaged", check: noFile(filepath.Join(dir, "c.db"))},
		{name: "snapshot of a member that does not answer", args: []string{"snapshot", "sample", filepath.Join(dir, "d.db"), "--member", "sample-ccccc"},
			etcd: func(f *fakeEtcd) { delete(f.statuses, "sample-ccccc") }, wantErr: "snapshot of sample from sample-ccccc: context deadline exceeded",
			check: noFile(filepath.Join(dir, "d.db"))},
		{name: "snapshot over a file", args: []string{"snapshot", "sample", existing}, wantErr: "existing.db exists: remove it or name another file"},
		{name: "snapshot needs a file", args: []string{"snapshot", "sample"}, wantErr: "snapshot takes 2 argument(s): [CLUSTER FILE]; got 1"},
	})
}
