package v1alpha1

// Limits the CRDs enforce at admission. The markers that enforce them are
// literal, so each limit is written twice, here and in a marker; the unit
// tests read the generated CRDs and fail when the two differ.
const (
	// MaxClusterNameLength bounds an EtcdCluster's name. The longest name
	// made from it is the final backup before a suspend,
	// <cluster>-suspend-<generation>: an EtcdBackup name, and so a label
	// value (at most 63 characters) on the backup's agent Pod. A generation
	// has up to 19 digits, which leaves 63-9-19 = 35. The other names made
	// from it are shorter: members <cluster>-<5 characters> (Pod hostnames
	// and label values), <cluster>-peer (a Service), scheduled backups
	// <cluster>-YYYYMMDD-HHMM.
	MaxClusterNameLength = 35

	// MaxBackupNameLength bounds an EtcdBackup's name: it is the value of
	// the backup label on its agent Pods.
	MaxBackupNameLength = 63

	// MaxExtraArgValueLength bounds each value of spec.options.extraArgs.
	MaxExtraArgValueLength = 1024

	// MinPatch35 is the first 3.5 release with the /livez and /readyz
	// endpoints the member Pods are probed on (etcd's CHANGELOG-3.5,
	// v3.5.11). spec.version refuses earlier 3.5 releases.
	MinPatch35 = 11
)

// DefaultedExtraArgs are the flags the operator sets by default, which
// spec.options.extraArgs may set instead: etcd's corruption checks (on
// unless the spec says otherwise; feature-gates are merged, a gate the spec
// names wins).
var DefaultedExtraArgs = []string{"experimental-initial-corrupt-check", "experimental-compact-hash-check-enabled", "feature-gates"}

// MinUpgradePatch is, for each minor version, the first patch release etcd's
// upgrade guide allows an upgrade to the next minor from (upgrade_3_6.md:
// "all of your 3.5 members are updated to 3.5.32 or later"; upgrade_3_7.md:
// 3.6.11). A minor upgrade waits, restarting nothing, until every member
// runs at least that patch.
var MinUpgradePatch = map[string]int{"3.5": 32, "3.6": 11}

// AllowedExtraArgs are the etcd flags spec.options.extraArgs may set.
//
// It is an allowlist, not a list of refused flags: etcd's flags differ
// between 3.5, 3.6 and 3.7 and every release adds some, so a denylist would
// let through the next flag that changes a member's identity, membership,
// durability or security. An unknown flag would make etcd exit at start and
// the member crash-loop, so refusing it at admission costs nothing that
// worked. Each entry is a flag of at least one of etcd 3.5, 3.6 and 3.7
// (server/etcdmain/config.go and server/embed/config.go of each release
// branch); both the experimental- names of 3.5 and the names 3.6 gave them
// are here, so that a spec works on both sides of an upgrade.
//
// Left out on purpose: every unsafe-* flag, force-new-cluster,
// strict-reconfig-check, max-learners (membership); enable-pprof (serves
// profiles on the plain-HTTP metrics port); enable-v2, v2-deprecation and
// experimental-enable-v2v3 (the v2 store); auth-token and bcrypt-cost (how
// the operator's own credentials work); host-whitelist, cors, the CRL files,
// the *-allowed-cn and *-allowed-hostname checks, self-signed-cert-validity,
// the client-cert and client-key files, peer-skip-client-san-verification
// (who may connect); discovery* and proxy* (how a member finds its cluster);
// socket-reuse-* (several processes on one port); version (exits at once).
// The flags the operator sets itself and those with a typed field in
// spec.options are refused with their own messages.
//
// The same list is in the marker on EtcdOptions.ExtraArgs; keep them equal
// (TestExtraArgsAllowlistMatchesCRD) and keep the list in docs/configuration.md
// in step.
var AllowedExtraArgs = []string{
	// logging
	"log-level", "logger", "log-outputs", "log-format", "enable-log-rotation", "log-rotation-config-json",
	// limits and performance
	"max-txn-ops", "max-concurrent-streams", "max-snapshots", "max-wals",
	"backend-batch-interval", "backend-batch-limit", "backend-bbolt-freelist-type",
	"raft-read-timeout", "raft-write-timeout",
	"grpc-keepalive-interval", "grpc-keepalive-min-time", "grpc-keepalive-timeout",
	"experimental-compaction-batch-limit", "compaction-batch-limit",
	"experimental-compaction-sleep-interval", "compaction-sleep-interval",
	"experimental-bootstrap-defrag-threshold-megabytes", "bootstrap-defrag-threshold-megabytes",
	"experimental-snapshot-catchup-entries", "snapshot-catchup-entries",
	"experimental-warning-apply-duration", "warning-apply-duration",
	"experimental-warning-unary-request-duration", "warning-unary-request-duration",
	"experimental-watch-progress-notify-interval", "watch-progress-notify-interval",
	"experimental-memory-mlock", "memory-mlock",
	"experimental-txn-mode-write-with-shared-buffer",
	"experimental-stop-grpc-service-on-defrag",
	// corruption checks
	"experimental-initial-corrupt-check",
	"experimental-corrupt-check-time", "corrupt-check-time",
	"experimental-compact-hash-check-enabled",
	"experimental-compact-hash-check-time", "compact-hash-check-time",
	// metrics, gRPC gateway, tracing
	"metrics", "enable-grpc-gateway",
	"experimental-enable-distributed-tracing", "enable-distributed-tracing",
	"experimental-distributed-tracing-address", "distributed-tracing-address",
	"experimental-distributed-tracing-service-name", "distributed-tracing-service-name",
	"experimental-distributed-tracing-instance-id", "distributed-tracing-instance-id",
	"experimental-distributed-tracing-sampling-rate", "distributed-tracing-sampling-rate",
	// feature gates (3.6 and later)
	"feature-gates",
	// TLS hardening
	"cipher-suites", "tls-min-version", "tls-max-version",
	// auth tokens, downgrades, elections, leases
	"auth-token-ttl",
	"experimental-downgrade-check-time", "downgrade-check-time",
	"pre-vote", "initial-election-tick-advance",
	"experimental-enable-lease-checkpoint", "experimental-enable-lease-checkpoint-persist",
}

// OwnedExtraArgs are the etcd flags the operator sets on every member;
// spec.options.extraArgs cannot set them.
var OwnedExtraArgs = []string{
	"name", "data-dir", "wal-dir", "initial-cluster", "initial-cluster-state", "initial-cluster-token",
	"initial-advertise-peer-urls", "advertise-client-urls", "listen-peer-urls", "listen-client-urls",
	"listen-metrics-urls", "listen-client-http-urls", "discovery", "discovery-srv", "force-new-cluster",
	"cert-file", "key-file", "trusted-ca-file", "client-cert-auth", "peer-cert-file", "peer-key-file",
	"peer-trusted-ca-file", "peer-client-cert-auth", "auto-tls", "peer-auto-tls", "config-file",
	"peer-cert-allowed-hostname",
}

// TypedExtraArgs are the etcd flags with a field of their own in
// spec.options; spec.options.extraArgs cannot set them.
var TypedExtraArgs = []string{
	"quota-backend-bytes", "auto-compaction-mode", "auto-compaction-retention", "snapshot-count",
	"heartbeat-interval", "election-timeout", "max-request-bytes",
}
