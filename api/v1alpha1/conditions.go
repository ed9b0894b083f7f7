package v1alpha1

// Conditions are the only contract between Raftsman's controllers. Each
// condition type has exactly one owner, the only controller that writes it;
// the others read it and act only when it is True and its observedGeneration
// equals the object's generation (a stale condition counts as Unknown).
//
//	| object      | condition    | owner               |
//	|-------------|--------------|---------------------|
//	| EtcdCluster | Available    | controllers/cluster |
//	| EtcdCluster | Progressing  | controllers/cluster |
//	| EtcdCluster | Degraded     | controllers/cluster |
//	| EtcdCluster | TLSReady     | controllers/tls     |
//	| EtcdCluster | AuthReady    | controllers/tls     |
//	| EtcdMember  | Registered   | controllers/cluster |
//	| EtcdMember  | Ready        | controllers/member  |
const (
	// ConditionAvailable is True while a quorum of voting members is healthy,
	// so the cluster serves reads and writes.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the operator is changing the
	// cluster: bootstrapping it, adding, promoting or removing a member.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when a member is unhealthy or missing.
	ConditionDegraded = "Degraded"

	// ConditionTLSReady is True when the cluster's certificates are in the
	// Secrets named in status.tls (or TLS is disabled). The cluster and
	// member controllers create no member and no Pod before.
	ConditionTLSReady = "TLSReady"
	// ConditionAuthReady is True when etcd's authentication is as the spec
	// says: on with the root password of the Secret in status.auth, or off.
	ConditionAuthReady = "AuthReady"

	// ConditionRegistered is True once etcd knows the member: it is one of
	// the initial members of a new cluster, or it was added as a learner.
	// The member controller creates the member's Pod only then.
	ConditionRegistered = "Registered"
	// ConditionReady is True while the member's Pod is Ready (etcd's own
	// readiness endpoint answers).
	ConditionReady = "Ready"
)

// Owners maps each condition type to the controller that owns it, per kind.
var Owners = map[string]map[string]string{
	"EtcdCluster": {
		ConditionAvailable:   "cluster",
		ConditionProgressing: "cluster",
		ConditionDegraded:    "cluster",
		ConditionTLSReady:    "tls",
		ConditionAuthReady:   "tls",
	},
	"EtcdMember": {
		ConditionRegistered: "cluster",
		ConditionReady:      "member",
	},
}

// Reasons of EtcdCluster conditions.
const (
	// ReasonQuorumHealthy: a quorum of voters answers (Available True).
	ReasonQuorumHealthy = "QuorumHealthy"
	// ReasonQuorumLost: fewer than a quorum of voters answer (Available False).
	ReasonQuorumLost = "QuorumLost"
	// ReasonBootstrapping: the initial members are starting (Available False,
	// Progressing True).
	ReasonBootstrapping = "Bootstrapping"
	// ReasonScalingUp: a member is being added as a learner (Progressing True).
	ReasonScalingUp = "ScalingUp"
	// ReasonPromotingLearner: a learner waits to be in sync before promotion.
	ReasonPromotingLearner = "PromotingLearner"
	// ReasonScalingDown: a member is being removed (Progressing True).
	ReasonScalingDown = "ScalingDown"
	// ReasonReplacingMember: a member that lost its data is being replaced.
	ReasonReplacingMember = "ReplacingMember"
	// ReasonWaitingForHealth: etcd refuses membership changes until every
	// voter has been connected for a while; the operator retries soon.
	ReasonWaitingForHealth = "WaitingForClusterHealth"
	// ReasonQuorumAtRisk: a removal waits because it would leave too few
	// healthy voters.
	ReasonQuorumAtRisk = "QuorumAtRisk"
	// ReasonConverged: membership matches the spec (Progressing False).
	ReasonConverged = "Converged"
	// ReasonMembersHealthy: every member is healthy (Degraded False).
	ReasonMembersHealthy = "MembersHealthy"
	// ReasonMembersUnhealthy: some member does not answer (Degraded True).
	ReasonMembersUnhealthy = "MembersUnhealthy"
	// ReasonEtcdError: an etcd call failed in an unexpected way.
	ReasonEtcdError = "EtcdError"
)

// Reasons of the TLSReady and AuthReady conditions.
const (
	// ReasonCertificatesReady: every certificate is in its Secret (TLSReady True).
	ReasonCertificatesReady = "CertificatesReady"
	// ReasonTLSDisabled: spec.tls.disabled is true (TLSReady True).
	ReasonTLSDisabled = "TLSDisabled"
	// ReasonSecretNotFound: a Secret named in the spec does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretInvalid: a Secret's certificate, key or CA is unusable;
	// the message says which key and why.
	ReasonSecretInvalid = "SecretInvalid"
	// ReasonCertManagerNotInstalled: the certManager source is used but
	// cert-manager's Certificate kind is not served.
	ReasonCertManagerNotInstalled = "CertManagerNotInstalled"
	// ReasonCertificatePending: cert-manager has not issued a certificate yet.
	ReasonCertificatePending = "CertificatePending"
	// ReasonIssueFailed: the operator could not write a certificate.
	ReasonIssueFailed = "IssueFailed"

	// ReasonAuthEnabled: authentication is on (AuthReady True).
	ReasonAuthEnabled = "AuthEnabled"
	// ReasonAuthDisabled: authentication is off as asked (AuthReady True).
	ReasonAuthDisabled = "AuthDisabled"
	// ReasonWaitingForAvailable: auth changes wait for the cluster to be
	// Available.
	ReasonWaitingForAvailable = "WaitingForAvailable"
	// ReasonCredentialsInvalid: the root credentials Secret is missing or
	// has no password.
	ReasonCredentialsInvalid = "CredentialsInvalid"

	// ReasonWaitingForTLS: the cluster controller waits for TLSReady
	// (Progressing True).
	ReasonWaitingForTLS = "WaitingForTLS"
	// ReasonRestartingMembers: members restart one at a time to load new
	// trusted CAs (Progressing True).
	ReasonRestartingMembers = "RestartingMembers"
)

// Reasons of EtcdMember conditions.
const (
	// ReasonInitialMember: the member bootstraps the cluster (Registered True).
	ReasonInitialMember = "InitialMember"
	// ReasonMemberAdded: the member was added with MemberAddAsLearner.
	ReasonMemberAdded = "MemberAdded"
	// ReasonAwaitingAdd: the member waits to be added to etcd.
	ReasonAwaitingAdd = "AwaitingMemberAdd"

	// ReasonPodReady: the member's Pod is Ready (Ready True).
	ReasonPodReady = "PodReady"
	// ReasonPodNotReady: the Pod is starting, or runs but etcd is not ready.
	ReasonPodNotReady = "PodNotReady"
	// ReasonWaitingForRegistration: the Pod waits for Registered.
	ReasonWaitingForRegistration = "WaitingForRegistration"
	// ReasonDataLost: the member's volume is gone; the member must be replaced.
	ReasonDataLost = "DataLost"
)
