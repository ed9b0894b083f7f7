// Package etcd is the small part of the etcd client the operator uses:
// membership, per-member status and leadership transfer, behind an interface
// with an in-memory fake for unit tests.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is one etcd member as MemberList reports it.
type Member struct {
	ID         uint64
	Name       string // empty until the member's etcd has started
	PeerURLs   []string
	ClientURLs []string
	IsLearner  bool
}

// Started reports whether the member's etcd has started and published itself.
func (m Member) Started() bool { return m.Name != "" }

// Status is what one member says of itself.
type Status struct {
	MemberID  uint64
	Leader    uint64
	Version   string
	IsLearner bool
	// RaftIndex is the member's committed raft index; RaftAppliedIndex the
	// index it has applied to its store.
	RaftIndex        uint64
	RaftAppliedIndex uint64
	// Revision is the member's store revision.
	Revision int64
	// DBSize is the size of the database file; DBSizeInUse the part of it
	// that holds data (the rest are free pages a defragmentation gives back).
	DBSize      int64
	DBSizeInUse int64
	Errors      []string
	// StorageVersion is the version of the member's data format (etcd 3.6
	// and later; empty before).
	StorageVersion string
	// Downgrade is etcd's downgrade state as this member knows it (3.6 and
	// later report it; 3.5 never does).
	Downgrade DowngradeInfo
}

// Alarm is an alarm one member raised: "NOSPACE" or "CORRUPT".
type Alarm struct {
	MemberID uint64
	Type     string
}

// Alarm types.
const (
	AlarmNoSpace = "NOSPACE"
	AlarmCorrupt = "CORRUPT"
)

// DowngradeInfo is whether a downgrade is enabled, and to which version.
type DowngradeInfo struct {
	Enabled       bool
	TargetVersion string
}

// DowngradeAction is one of etcd's downgrade API calls.
type DowngradeAction int

const (
	// DowngradeValidate asks whether the cluster can downgrade to a version.
	DowngradeValidate DowngradeAction = iota
	// DowngradeEnable starts a downgrade: the cluster version drops to the
	// target, after which members may run the older minor.
	DowngradeEnable
	// DowngradeCancel ends an enabled downgrade.
	DowngradeCancel
)

func (a DowngradeAction) String() string {
	return [...]string{"validate", "enable", "cancel"}[a]
}

// Client talks to one etcd cluster.
type Client interface {
	// MemberList returns the cluster ID and the members.
	MemberList(ctx context.Context) (uint64, []Member, error)
	// MemberAddAsLearner adds a learner with the given peer URL.
	MemberAddAsLearner(ctx context.Context, peerURL string) (Member, error)
	// MemberPromote makes a learner a voter.
	MemberPromote(ctx context.Context, id uint64) error
	// MemberRemove removes a member.
	MemberRemove(ctx context.Context, id uint64) error
	// MoveLeader asks the leader, reached at leaderEndpoint, to hand
	// leadership to the member with the given ID.
	MoveLeader(ctx context.Context, leaderEndpoint string, to uint64) error
	// Status asks one member, at its client URL, for its status.
	Status(ctx context.Context, endpoint string) (Status, error)
	// Alarms lists the alarms etcd has raised (NOSPACE, CORRUPT), each with
	// the member that raised it.
	Alarms(ctx context.Context) ([]Alarm, error)
	// DisarmAlarm clears one alarm of one member.
	DisarmAlarm(ctx context.Context, a Alarm) error
	// Compact compacts the key-value history up to revision rev, keeping
	// rev and later; a revision already compacted is not an error.
	Compact(ctx context.Context, rev int64) error
	// Defragment defragments the database of one member, at its client
	// URL. The member serves no request meanwhile.
	Defragment(ctx context.Context, endpoint string) error
	// Downgrade calls etcd's downgrade API with a target version like
	// 3.5.0 and returns the cluster version etcd answers with.
	Downgrade(ctx context.Context, action DowngradeAction, version string) (string, error)

	// AuthEnabled says whether etcd's authentication is on.
	AuthEnabled(ctx context.Context) (bool, error)
	// EnableAuth creates the root role and the root user with this
	// password, grants the role and enables authentication. Every part of it
	// may run again: what exists is kept, and the password is set anyway.
	EnableAuth(ctx context.Context, rootPassword string) error
	// SetRootPassword changes the root user's password.
	SetRootPassword(ctx context.Context, password string) error
	// DisableAuth turns authentication off.
	DisableAuth(ctx context.Context) error

	// EnsureUser makes etcd hold the user as u says: its role with exactly
	// u.Permissions (those granted before and no longer wanted are
	// revoked), the user with that role and no other (root's included),
	// and its password. Every part of it may run again.
	EnsureUser(ctx context.Context, u User) error
	// DeleteUser removes a user and its role; either being gone already
	// is not an error.
	DeleteUser(ctx context.Context, name, role string) error
}

// Access is what a role may do with a range of keys.
type Access int

const (
	// AccessRead: range and watch.
	AccessRead Access = iota
	// AccessWrite: put and delete.
	AccessWrite
	// AccessReadWrite: both.
	AccessReadWrite
)

func (a Access) String() string { return [...]string{"read", "write", "readwrite"}[a] }

// Permission lets a role use the keys from Key up to RangeEnd (excluded;
// Key alone when RangeEnd is empty).
type Permission struct {
	Key, RangeEnd string
	Access        Access
}

// PrefixPermission covers every key that starts with prefix; "" covers
// every key.
func PrefixPermission(prefix string, a Access) Permission {
	if prefix == "" {
		// etcd's "every key": from the smallest key, to no end.
		return Permission{Key: "\x00", RangeEnd: "\x00", Access: a}
	}
	return Permission{Key: prefix, RangeEnd: clientv3.GetPrefixRangeEnd(prefix), Access: a}
}

// User is an etcd user the operator keeps, with one role of its own.
type User struct {
	Name string
	// Role is the user's only role, with Permissions.
	Role        string
	Permissions []Permission
	// Password is the user's password; empty makes a user that can log in
	// only with a certificate (its common name), when etcd adds it.
	Password string
	// SetPassword sets Password on a user that exists already.
	SetPassword bool
}

// Credentials are what the operator presents to etcd: PEM client
// certificate, key and the CA bundle that signs the servers. Empty means a
// plain connection.
type Credentials struct {
	CertPEM, KeyPEM, CAPEM []byte
}

// TLS says whether the connection uses TLS.
func (c Credentials) TLS() bool { return len(c.CAPEM) > 0 }

// Scheme is the URL scheme of the connection.
func (c Credentials) Scheme() string {
	if c.TLS() {
		return "https"
	}
	return "http"
}

// Factory gives the client of one cluster, cached by key.
type Factory interface {
	// Get returns a client for the cluster key that talks to endpoints
	// with these credentials; new credentials make a new client.
	Get(ctx context.Context, key string, endpoints []string, creds Credentials) (Client, error)
	// Forget closes and drops the client of the cluster key.
	Forget(key string)
}

// FormatID writes a member or cluster ID the way etcdctl does.
func FormatID(id uint64) string { return strconv.FormatUint(id, 16) }

// FormatBytes writes a size in binary units like etcdctl's table: 12.5 MiB.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// ParseID reads an ID written by FormatID.
func ParseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("parse etcd ID %q: %w", s, err)
	}
	return id, nil
}

// Errors the fake returns and the real client maps etcd's answers to, so that
// callers can tell "not yet" from a failure.
var (
	// ErrNotYet: etcd refused a membership change for now (cluster not
	// healthy long enough, learner not in sync, too many learners, no leader).
	ErrNotYet = errors.New("etcd refused the change for now")
	// ErrMemberNotFound: no member with that ID.
	ErrMemberNotFound = errors.New("member not found")
	// ErrNotLearner: promotion of a member that already votes.
	ErrNotLearner = errors.New("member is not a learner")
	// ErrPeerURLExists: a member with that peer URL is already there.
	ErrPeerURLExists = errors.New("peer URL already exists")
	// ErrRootUser: the operator never makes root an ordinary user.
	ErrRootUser = errors.New("root is the operator's administrator, not a user it keeps")
	// ErrUnreachable: no endpoint answered.
	ErrUnreachable = errors.New("etcd unreachable")
)
