package etcd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Fake is an in-memory etcd cluster for unit tests. It keeps etcd's rules
// that matter to the operator: --max-learners learners at a time (one
// unless SetMaxLearners says otherwise), no membership change
// while a voter is down, promotion only of a learner in sync, and it lets a
// test inject an error into the next calls of a method.
type Fake struct {
	mu      sync.Mutex
	id      uint64
	members []*fakeMember
	leader  uint64
	nextID  uint64
	version string
	fail    map[string][]error
	calls   map[string]int
	// maxLearners is the members' --max-learners (0: etcd's default, 1).
	maxLearners int

	// downgrade is the enabled downgrade's target minor ("3.5"), if any.
	downgrade string
	alarms    []Alarm

	// compacted is the revision of the last compaction; defragmented
	// lists the members defragmented, in order.
	compacted    int64
	defragmented []string
	// hold, when set, keeps each Defragment waiting until it is closed;
	// the member answers no Status meanwhile, as a real one busy
	// defragmenting a large database may not.
	hold chan struct{}

	authEnabled  bool
	rootPassword string
	// users and roles are those EnsureUser made (and AddUser put there).
	users map[string]*FakeUser
	roles map[string]map[rangeKey]Access
	// creds are the credentials of the last Get of this cluster.
	creds Credentials
}

type fakeMember struct {
	Member
	healthy bool
	inSync  bool
	// version the member runs; the cluster's default when empty.
	version string
	// lag is how many entries the member's applied index is behind.
	lag uint64
	// index is the member's committed raft index (1<<20 when zero).
	index uint64
	// storage, when set, is the data format the member reports instead of
	// the one its version and an enabled downgrade make.
	storage string
	// dbSize and inUse are the database file's size and the part in use.
	dbSize, inUse int64
	// defragmenting: a held Defragment runs on this member.
	defragmenting bool
}

// SetMaxLearners sets the --max-learners every member runs with (0 or 1:
// one learner at a time, etcd's default).
func (f *Fake) SetMaxLearners(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maxLearners = n
}

var _ Client = (*Fake)(nil)

// NewFake returns an etcd cluster that has not formed yet.
func NewFake() *Fake {
	return &Fake{id: 0xc1a5, nextID: 0x1000, version: "3.6.16", fail: map[string][]error{}, calls: map[string]int{}}
}

// Bootstrap forms the cluster from started, healthy voters; the first leads.
// Each member is given as name, peer URL and client URL.
func (f *Fake) Bootstrap(members ...[3]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range members {
		f.nextID++
		f.members = append(f.members, &fakeMember{
			Member:  Member{ID: f.nextID, Name: m[0], PeerURLs: []string{m[1]}, ClientURLs: []string{m[2]}},
			healthy: true, inSync: true,
		})
	}
	if len(f.members) > 0 && f.leader == 0 {
		f.leader = f.members[0].ID
	}
}

// Start makes the member with this peer URL start: it publishes its name
// and client URL and answers. A learner is in sync at once unless inSync is false.
func (f *Fake) Start(peerURL, name, clientURL string, inSync bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if slices.Contains(m.PeerURLs, peerURL) {
			m.Name, m.ClientURLs, m.healthy, m.inSync = name, []string{clientURL}, true, inSync
		}
	}
}

// setNamed changes the named member.
func (f *Fake) setNamed(name string, set func(*fakeMember)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.Name == name {
			set(m)
		}
	}
}

// SetHealthy makes the named member answer or not.
func (f *Fake) SetHealthy(name string, healthy bool) {
	f.setNamed(name, func(m *fakeMember) { m.healthy = healthy })
}

// SetInSync says whether the learner with this peer URL caught up.
func (f *Fake) SetInSync(peerURL string, inSync bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if slices.Contains(m.PeerURLs, peerURL) {
			m.inSync = inSync
		}
	}
}

// SetLeader makes the named member lead.
func (f *Fake) SetLeader(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.Name == name {
			f.leader = m.ID
		}
	}
}

// ForceNewCluster does what etcd's --force-new-cluster does to the named
// member: it restarts alone as a one-member cluster with its data, the
// others no longer members.
func (f *Fake) ForceNewCluster(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members = slices.DeleteFunc(f.members, func(m *fakeMember) bool { return m.Name != name })
	for _, m := range f.members {
		m.healthy, m.IsLearner = true, false
		f.leader = m.ID
	}
}

// RestoreSnapshot does what starting a member restored from a snapshot
// does: the old cluster is gone, and a new one with a new ID runs with
// that one member (name, peer URL and client URL) as its leader.
func (f *Fake) RestoreSnapshot(member [3]string) {
	f.mu.Lock()
	f.id++
	f.members, f.leader, f.alarms = nil, 0, nil
	f.mu.Unlock()
	f.Bootstrap(member)
}

// RaiseAlarm makes etcd report an alarm of the named member.
func (f *Fake) RaiseAlarm(name, typ string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.Name == name {
			f.alarms = append(f.alarms, Alarm{MemberID: m.ID, Type: typ})
		}
	}
}

// Alarms implements Client.
func (f *Fake) Alarms(context.Context) ([]Alarm, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("Alarms"); err != nil {
		return nil, err
	}
	return slices.Clone(f.alarms), nil
}

// DisarmAlarm implements Client.
func (f *Fake) DisarmAlarm(_ context.Context, a Alarm) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("DisarmAlarm"); err != nil {
		return err
	}
	f.alarms = slices.DeleteFunc(f.alarms, func(x Alarm) bool { return x == a })
	return nil
}

// SetVersion makes the named member run version, as after a restart on
// another image. Once every member runs the target minor of an enabled
// downgrade, the downgrade ends, as etcd ends it.
func (f *Fake) SetVersion(name, version string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.Name == name {
			m.version = version
		}
	}
	if f.downgrade != "" && !slices.ContainsFunc(f.members, func(m *fakeMember) bool { return minorOf(f.versionOf(m)) != f.downgrade }) {
		f.downgrade = ""
	}
}

// SetLag makes the named member's applied index trail the leader's
// committed index by lag entries.
func (f *Fake) SetLag(name string, lag uint64) {
	f.setNamed(name, func(m *fakeMember) { m.lag = lag })
}

// SetRaftIndex makes the named member report index as its committed raft
// index (its applied index trails by its lag, its revision is half).
func (f *Fake) SetRaftIndex(name string, index uint64) {
	f.setNamed(name, func(m *fakeMember) { m.index = index })
}

// SetDBSize makes the named member report a database file of size bytes,
// inUse of them holding data.
func (f *Fake) SetDBSize(name string, size, inUse int64) {
	f.setNamed(name, func(m *fakeMember) { m.dbSize, m.inUse = size, inUse })
}

// Defragmented lists the members defragmented so far, in order.
func (f *Fake) Defragmented() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.defragmented)
}

// Compacted is the revision of the last compaction (0 for none).
func (f *Fake) Compacted() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.compacted
}

// Compact implements Client.
func (f *Fake) Compact(_ context.Context, rev int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("Compact"); err != nil {
		return err
	}
	f.compacted = max(f.compacted, rev)
	return nil
}

// Defragment implements Client: the member's file shrinks to what is in use.
func (f *Fake) Defragment(ctx context.Context, endpoint string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("Defragment"); err != nil {
		return err
	}
	for _, m := range f.members {
		if slices.Contains(m.ClientURLs, endpoint) && m.healthy {
			if hold := f.hold; hold != nil {
				m.defragmenting = true
				f.mu.Unlock()
				select {
				case <-hold:
				case <-ctx.Done():
				}
				f.mu.Lock()
				m.defragmenting = false
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
			m.dbSize = m.inUse
			f.defragmented = append(f.defragmented, m.Name)
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrUnreachable, endpoint)
}

// HoldDefragments keeps every Defragment from now on waiting (its member
// answering no Status) until release is called.
func (f *Fake) HoldDefragments() (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := make(chan struct{})
	f.hold = h
	return sync.OnceFunc(func() {
		f.mu.Lock()
		f.hold = nil
		f.mu.Unlock()
		close(h)
	})
}

// Defragmenting names the members a held Defragment runs on.
func (f *Fake) Defragmenting() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, m := range f.members {
		if m.defragmenting {
			names = append(names, m.Name)
		}
	}
	return names
}

// SetStorageVersion makes the named member report version as its data
// format, whatever its version and the downgrade say ("" lets them again).
func (f *Fake) SetStorageVersion(name, version string) {
	f.setNamed(name, func(m *fakeMember) { m.storage = version })
}

// DowngradeTarget is the minor an enabled downgrade goes to, or "".
func (f *Fake) DowngradeTarget() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.downgrade
}

func (f *Fake) versionOf(m *fakeMember) string {
	if m.version != "" {
		return m.version
	}
	return f.version
}

// minorOf is "3.6" of "3.6.16".
func minorOf(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// Downgrade implements Client: the target must be one minor below the
// lowest version the members run, as etcd requires.
func (f *Fake) Downgrade(_ context.Context, action DowngradeAction, version string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("Downgrade"); err != nil {
		return "", err
	}
	lowest := ""
	for _, m := range f.members {
		if v := minorOf(f.versionOf(m)); lowest == "" || v < lowest {
			lowest = v
		}
	}
	switch action {
	case DowngradeCancel:
		if f.downgrade == "" {
			return "", fmt.Errorf("no inflight downgrade job")
		}
		f.downgrade = ""
		return lowest, nil
	case DowngradeEnable:
		if f.downgrade != "" {
			return "", fmt.Errorf("the cluster has an ongoing downgrade job")
		}
	}
	target := minorOf(version)
	if f.downgrade == "" && (len(target) != len(lowest) || target >= lowest || lowest[len(lowest)-1]-target[len(target)-1] != 1) {
		return "", fmt.Errorf("invalid downgrade target version %s: cluster version %s", version, lowest)
	}
	if action == DowngradeEnable {
		f.downgrade = target
	}
	return lowest, nil
}

// FailNext makes the next calls of method (a Client method name) return errs,
// one per call.
func (f *Fake) FailNext(method string, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = append(f.fail[method], errs...)
}

// Calls returns how often method was called, failed calls included.
func (f *Fake) Calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// Members returns a copy of the members.
func (f *Fake) Members() []Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.list()
}

// Leader returns the leader's ID.
func (f *Fake) Leader() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader
}

func (f *Fake) list() []Member {
	out := make([]Member, 0, len(f.members))
	for _, m := range f.members {
		c := m.Member
		c.PeerURLs, c.ClientURLs = slices.Clone(m.PeerURLs), slices.Clone(m.ClientURLs)
		out = append(out, c)
	}
	return out
}

// Panic is an error for FailNext that makes the call panic with v
// instead of returning: a bug in a client library, say.
func Panic(v any) error { return panicking{v} }

type panicking struct{ v any }

func (p panicking) Error() string { return fmt.Sprintf("panic: %v", p.v) }

// enter counts the call and pops an injected error (or panics, for one
// made by Panic); the caller holds no lock.
func (f *Fake) enter(method string) error {
	f.calls[method]++
	if errs := f.fail[method]; len(errs) > 0 {
		f.fail[method] = errs[1:]
		if p, ok := errs[0].(panicking); ok {
			panic(p.v)
		}
		return errs[0]
	}
	return nil
}

func (f *Fake) find(id uint64) *fakeMember {
	for _, m := range f.members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func (f *Fake) allVotersHealthy() bool {
	for _, m := range f.members {
		if !m.IsLearner && !m.healthy {
			return false
		}
	}
	return true
}

// MemberList implements Client.
func (f *Fake) MemberList(context.Context) (uint64, []Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("MemberList"); err != nil {
		return 0, nil, err
	}
	if !f.quorum() {
		return 0, nil, fmt.Errorf("%w: no quorum", ErrUnreachable)
	}
	return f.id, f.list(), nil
}

func (f *Fake) quorum() bool {
	voters, healthy := 0, 0
	for _, m := range f.members {
		if !m.IsLearner {
			voters++
			if m.healthy {
				healthy++
			}
		}
	}
	return voters > 0 && healthy > voters/2
}

// MemberAddAsLearner implements Client.
func (f *Fake) MemberAddAsLearner(_ context.Context, peerURL string) (Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("MemberAddAsLearner"); err != nil {
		return Member{}, err
	}
	learners := 0
	for _, m := range f.members {
		if slices.Contains(m.PeerURLs, peerURL) {
			return Member{}, fmt.Errorf("%w: %s", ErrPeerURLExists, peerURL)
		}
		if m.IsLearner {
			learners++
		}
	}
	if learners >= max(f.maxLearners, 1) {
		return Member{}, fmt.Errorf("%w: too many learner members in cluster", ErrNotYet)
	}
	if !f.allVotersHealthy() {
		return Member{}, fmt.Errorf("%w: unhealthy cluster", ErrNotYet)
	}
	f.nextID++
	m := &fakeMember{Member: Member{ID: f.nextID, PeerURLs: []string{peerURL}, IsLearner: true}}
	f.members = append(f.members, m)
	return m.Member, nil
}

// MemberPromote implements Client.
func (f *Fake) MemberPromote(_ context.Context, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("MemberPromote"); err != nil {
		return err
	}
	m := f.find(id)
	switch {
	case m == nil:
		return fmt.Errorf("%w: %x", ErrMemberNotFound, id)
	case !m.IsLearner:
		return fmt.Errorf("%w: %x", ErrNotLearner, id)
	case !m.healthy || !m.inSync:
		return fmt.Errorf("%w: can only promote a learner member which is in sync with leader", ErrNotYet)
	}
	m.IsLearner = false
	return nil
}

// MemberRemove implements Client.
func (f *Fake) MemberRemove(_ context.Context, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("MemberRemove"); err != nil {
		return err
	}
	i := slices.IndexFunc(f.members, func(m *fakeMember) bool { return m.ID == id })
	if i < 0 {
		return fmt.Errorf("%w: %x", ErrMemberNotFound, id)
	}
	f.members = slices.Delete(f.members, i, i+1)
	if f.leader == id {
		f.leader = 0
		for _, m := range f.members {
			if !m.IsLearner && m.healthy {
				f.leader = m.ID
				break
			}
		}
	}
	return nil
}

// MoveLeader implements Client.
func (f *Fake) MoveLeader(_ context.Context, leaderEndpoint string, to uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("MoveLeader"); err != nil {
		return err
	}
	l := f.find(f.leader)
	if l == nil || !slices.Contains(l.ClientURLs, leaderEndpoint) {
		return fmt.Errorf("move leader: %s is not the leader", leaderEndpoint)
	}
	t := f.find(to)
	if t == nil || t.IsLearner || !t.healthy {
		return fmt.Errorf("move leader: %x cannot lead", to)
	}
	f.leader = to
	return nil
}

// Status implements Client.
func (f *Fake) Status(_ context.Context, endpoint string) (Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("Status"); err != nil {
		return Status{}, err
	}
	for _, m := range f.members {
		if slices.Contains(m.ClientURLs, endpoint) {
			if !m.healthy || m.defragmenting {
				break
			}
			v := m.version
			if v == "" {
				v = f.version
			}
			index := m.index
			if index == 0 {
				index = 1 << 20
			}
			st := Status{MemberID: m.ID, Leader: f.leader, Version: v, IsLearner: m.IsLearner, RaftIndex: index, RaftAppliedIndex: index - min(m.lag, index), Revision: int64(index / 2),
				DBSize: m.dbSize, DBSizeInUse: m.inUse}
			if minorOf(v) >= "3.6" {
				// etcd 3.6 and later report their data format: their
				// minor, or an enabled downgrade's target.
				st.StorageVersion = minorOf(v) + ".0"
			}
			if f.downgrade != "" {
				st.Downgrade = DowngradeInfo{Enabled: true, TargetVersion: f.downgrade + ".0"}
				if st.StorageVersion != "" {
					st.StorageVersion = f.downgrade + ".0"
				}
			}
			if m.storage != "" {
				st.StorageVersion = m.storage
			}
			// As etcd does: no leader, and every alarm of the cluster.
			if f.leader == 0 {
				st.Errors = append(st.Errors, "etcdserver: no leader")
			}
			for _, a := range f.alarms {
				st.Errors = append(st.Errors, fmt.Sprintf("memberID:%d alarm:%s", a.MemberID, a.Type))
			}
			return st, nil
		}
	}
	return Status{}, fmt.Errorf("%w: %s", ErrUnreachable, endpoint)
}

// AuthEnabled implements Client.
func (f *Fake) AuthEnabled(context.Context) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("AuthEnabled"); err != nil {
		return false, err
	}
	return f.authEnabled, nil
}

// EnableAuth implements Client.
func (f *Fake) EnableAuth(_ context.Context, rootPassword string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("EnableAuth"); err != nil {
		return err
	}
	f.authEnabled, f.rootPassword = true, rootPassword
	return nil
}

// SetRootPassword implements Client.
func (f *Fake) SetRootPassword(_ context.Context, password string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("SetRootPassword"); err != nil {
		return err
	}
	f.rootPassword = password
	return nil
}

// DisableAuth implements Client.
func (f *Fake) DisableAuth(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("DisableAuth"); err != nil {
		return err
	}
	f.authEnabled = false
	return nil
}

// RootPassword is the root password etcd has, and whether auth is on.
func (f *Fake) RootPassword() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rootPassword, f.authEnabled
}

// LastCredentials are the credentials the cluster's client was last got with.
func (f *Fake) LastCredentials() Credentials {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creds
}

// FakeFactory hands out one Fake per cluster key.
type FakeFactory struct {
	mu       sync.Mutex
	clusters map[string]*Fake
	// MaxLearners is the --max-learners of the fakes it makes from now
	// on: every member of each runs with it (0: etcd's default, 1).
	MaxLearners int
}

var _ Factory = (*FakeFactory)(nil)

// NewFakeFactory returns a factory with no clusters.
func NewFakeFactory() *FakeFactory { return &FakeFactory{clusters: map[string]*Fake{}} }

// Cluster returns the fake of the cluster key, making it when needed.
func (f *FakeFactory) Cluster(key string) *Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clusters[key]
	if !ok {
		c = NewFake()
		c.maxLearners = f.MaxLearners
		f.clusters[key] = c
	}
	return c
}

// Get implements Factory.
func (f *FakeFactory) Get(_ context.Context, key string, _ []string, creds Credentials) (Client, error) {
	c := f.Cluster(key)
	c.mu.Lock()
	c.creds = creds
	c.mu.Unlock()
	return c, nil
}

// Forget implements Factory.
func (f *FakeFactory) Forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.clusters, key)
}
