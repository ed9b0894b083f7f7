package cluster

import (
	"strings"
	"testing"
)

func TestPlanVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		running         []string
		target          string
		want            versionChange
		lowest, highest string
		// msgHas are what a blocked plan's message must name: the version
		// to set first.
		msgHas []string
	}{
		{name: "nothing runs yet", running: nil, target: "3.6.16", want: versionFree},
		{name: "members not answering are skipped", running: []string{"", ""}, target: "3.6.16", want: versionFree},
		{name: "same version", running: []string{"3.6.16", "3.6.16", "3.6.16"}, target: "3.6.16", want: versionFree, lowest: "3.6.16", highest: "3.6.16"},
		{name: "patch up", running: []string{"3.6.10", "3.6.10", "3.6.10"}, target: "3.6.16", want: versionFree, lowest: "3.6.10", highest: "3.6.10"},
		{name: "patch down", running: []string{"3.6.16", "3.6.16", "3.6.16"}, target: "3.6.10", want: versionFree, lowest: "3.6.16", highest: "3.6.16"},
		{name: "patch versions ordered numerically", running: []string{"3.5.10", "3.5.9", "3.5.35"}, target: "3.5.35", want: versionFree, lowest: "3.5.9", highest: "3.5.35"},
		{name: "one minor up from the guide's minimum", running: []string{"3.5.32", "3.5.32", "3.5.32"}, target: "3.6.16", want: versionUpgrade, lowest: "3.5.32", highest: "3.5.32"},
		{name: "one minor up", running: []string{"3.5.35", "3.5.35", "3.5.35"}, target: "3.6.16", want: versionUpgrade, lowest: "3.5.35", highest: "3.5.35"},
		{name: "upgrade under way", running: []string{"3.5.35", "3.6.16", "3.6.16"}, target: "3.6.16", want: versionUpgrade, lowest: "3.5.35", highest: "3.6.16"},
		{name: "3.6 to 3.7", running: []string{"3.6.11", "3.6.16"}, target: "3.7.3", want: versionUpgrade, lowest: "3.6.11", highest: "3.6.16"},
		{name: "one minor down", running: []string{"3.6.16", "3.6.16", "3.6.16"}, target: "3.5.35", want: versionDowngrade, lowest: "3.6.16", highest: "3.6.16"},
		{name: "one minor down from mixed patches", running: []string{"3.6.16", "3.6.10"}, target: "3.5.35", want: versionDowngrade, lowest: "3.6.10", highest: "3.6.16"},
		{name: "downgrade under way is plain restarts", running: []string{"3.6.16", "3.5.35", "3.6.16"}, target: "3.5.35", want: versionFree, lowest: "3.5.35", highest: "3.6.16"},
		{name: "back from an unfinished upgrade", running: []string{"3.6.16", "3.7.3", "3.6.16"}, target: "3.6.16", want: versionFree, lowest: "3.6.16", highest: "3.7.3"},
		{name: "two minors up", running: []string{"3.5.35", "3.5.35", "3.5.35"}, target: "3.7.3", want: versionBlocked, lowest: "3.5.35", highest: "3.5.35", msgHas: []string{"3.6.x", "3.7.3", "one minor version at a time"}},
		{name: "two minors down", running: []string{"3.7.3", "3.7.3", "3.7.3"}, target: "3.5.35", want: versionBlocked, lowest: "3.7.3", highest: "3.7.3", msgHas: []string{"3.6.x", "3.5.35", "one minor version at a time"}},
		{name: "3.5 below the 3.6 upgrade minimum", running: []string{"3.5.20", "3.5.20", "3.5.20"}, target: "3.6.16", want: versionBlocked, lowest: "3.5.20", highest: "3.5.20", msgHas: []string{"3.5.32", "3.6.16"}},
		{name: "one member below the minimum", running: []string{"3.5.35", "3.5.31", "3.5.35"}, target: "3.6.16", want: versionBlocked, lowest: "3.5.31", highest: "3.5.35", msgHas: []string{"3.5.32", "3.5.31"}},
		{name: "3.6 below the 3.7 upgrade minimum", running: []string{"3.6.10", "3.6.10", "3.6.10"}, target: "3.7.3", want: versionBlocked, lowest: "3.6.10", highest: "3.6.10", msgHas: []string{"3.6.11", "3.7.3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := planVersion(tt.running, tt.target)
			if p.change != tt.want {
				t.Errorf("change = %d, want %d (message %q)", p.change, tt.want, p.msg)
			}
			if p.target != tt.target || p.lowest != tt.lowest || p.highest != tt.highest {
				t.Errorf("target, lowest, highest = %q %q %q, want %q %q %q", p.target, p.lowest, p.highest, tt.target, tt.lowest, tt.highest)
			}
			if tt.want != versionBlocked && p.msg != "" {
				t.Errorf("message %q on a plan that is not blocked", p.msg)
			}
			if tt.want == versionBlocked && p.msg == "" {
				t.Errorf("blocked plan without a message")
			}
			for _, s := range tt.msgHas {
				if !strings.Contains(p.msg, s) {
					t.Errorf("message %q does not name %s", p.msg, s)
				}
			}
		})
	}
}

func TestVersionParts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in            string
		minor         string
		minorN, patch int
	}{
		{in: "3.6.16", minor: "3.6", minorN: 6, patch: 16},
		{in: "3.5.0", minor: "3.5", minorN: 5, patch: 0},
		{in: "3.10.2", minor: "3.10", minorN: 10, patch: 2},
		{in: "3.6.16-rc.1", minor: "3.6", minorN: 6, patch: 16},
		{in: "3.6", minor: "3.6", minorN: 6, patch: -1},
		{in: "3.6.x", minor: "3.6", minorN: 6, patch: -1},
		{in: "3.x.1", minor: "3.x", minorN: -1, patch: 1},
		{in: "3", minor: "3", minorN: -1, patch: -1},
		{in: "", minor: "", minorN: -1, patch: -1},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			if got := minorOf(tt.in); got != tt.minor {
				t.Errorf("minorOf(%q) = %q, want %q", tt.in, got, tt.minor)
			}
			if got := minorNum(tt.in); got != tt.minorN {
				t.Errorf("minorNum(%q) = %d, want %d", tt.in, got, tt.minorN)
			}
			if got := patchNum(tt.in); got != tt.patch {
				t.Errorf("patchNum(%q) = %d, want %d", tt.in, got, tt.patch)
			}
		})
	}
}

func TestDowngradeTarget(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{in: "3.5.35", want: "3.5.0"},
		{in: "3.6.16", want: "3.6.0"},
		{in: "3.5.0", want: "3.5.0"},
	}
	for _, tt := range tests {
		if got := downgradeTarget(tt.in); got != tt.want {
			t.Errorf("downgradeTarget(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
