package main

import "testing"

func TestParseSections(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		list, want string
		all, refs  bool
		wantErr    bool
	}{
		{list: "", want: "membership, rolling, migration, healing, defrag, scaling, resume", all: true, refs: true},
		{list: "resume, scaling", want: "scaling, resume", refs: true},
		{list: "migration", want: "membership, migration", refs: true},
		{list: "defrag", want: "defrag"},
		{list: "resume,nope", wantErr: true},
	} {
		s, err := parseSections(tc.list)
		if (err != nil) != tc.wantErr {
			t.Fatalf("parseSections(%q): error %v, want error %v", tc.list, err, tc.wantErr)
		}
		if err != nil {
			continue
		}
		if s.String() != tc.want || s.all() != tc.all || s.references() != tc.refs {
			t.Errorf("parseSections(%q) = %q (all %v, references %v), want %q (all %v, references %v)", tc.list, s, s.all(), s.references(), tc.want, tc.all, tc.refs)
		}
	}
}
