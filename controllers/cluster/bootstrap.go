package cluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// memberSpec is the spec of a member of the cluster.
func (r *Reconciler) memberSpec(s *scope, name string, state etcdv1.InitialClusterState, initialCluster string) etcdv1.EtcdMemberSpec {
	c, d := s.cluster, r.Options.ClusterDomain
	return etcdv1.EtcdMemberSpec{
		ClusterName:         c.Name,
		Version:             c.Spec.Version,
		Image:               resources.Image(c, r.Options.EtcdRepository),
		Storage:             c.Spec.Storage,
		InitialClusterState: state,
		InitialCluster:      initialCluster,
		ClusterToken:        string(c.UID),
		PeerURL:             resources.PeerURL(c, name, d),
		ClientURL:           resources.ClientURL(c, name, d),
		Resources:           c.Spec.Resources.Core(),
		PodTemplate:         c.Spec.PodTemplate,
		Options:             resources.MemberOptions(c, s.legacyOptions()),
		TLS:                 memberTLS(c),
		AgentImage:          r.Options.AgentImage,
		MaxLearners:         resources.MaxLearners(c.Spec.Version, r.Options.MaxLearners),
	}
}

// memberTLS is what a member mounts, by the names in status.tls.
// Every step that builds a member runs behind waitForTLS, so they are
// known; nil otherwise.
func memberTLS(c *etcdv1.EtcdCluster) *etcdv1.MemberTLS {
	st, ok := c.TLSSecrets()
	if c.Spec.TLS.Disabled || !ok {
		return nil
	}
	return &etcdv1.MemberTLS{
		PeerSecretName:   st.PeerSecretName,
		ServerSecretName: st.ServerSecretName,
		ClientCertAuth:   c.Spec.TLS.Client.IsMutual(),
		TrustRevision:    st.TrustRevision,
	}
}

// waitForTLS holds every membership change back until the tls controller
// has the cluster's certificates for its current generation: members are
// created with the Secret names of status.tls and must find them filled.
// A formed cluster is still observed meanwhile (the Secrets of its running
// members stay), so bootstrapOnly lets observation pass.
func (r *Reconciler) waitForTLS(bootstrapOnly bool) kube.Step[*scope] {
	return func(_ context.Context, s *scope) (ctrl.Result, error) {
		c := s.cluster
		if bootstrapOnly && c.Status.ClusterID != "" {
			return ctrl.Result{}, nil
		}
		if _, ok := c.TLSSecrets(); ok || (c.Spec.TLS.Disabled && c.TLSCurrent()) {
			return ctrl.Result{}, nil
		}
		s.waiting, s.waitingMsg = etcdv1.ReasonWaitingForTLS, "Membership changes wait for the TLSReady condition of this spec.tls (set by the tls controller)"
		// The condition's change wakes this controller; the requeue is a
		// backstop only.
		return ctrl.Result{RequeueAfter: r.Options.HealthInterval}, nil
	}
}

// newMember creates an EtcdMember; its existence is the persisted intent.
func (r *Reconciler) newMember(ctx context.Context, s *scope, name string, spec etcdv1.EtcdMemberSpec, annotations map[string]string) error {
	m := &etcdv1.EtcdMember{}
	m.Name, m.Namespace = name, s.cluster.Namespace
	m.Labels = resources.ObjectLabels(s.cluster)
	m.Annotations = annotations
	m.Finalizers = []string{etcdv1.MemberFinalizer}
	m.Spec = spec
	if err := controllerutil.SetControllerReference(s.cluster, m, r.Scheme()); err != nil {
		return fmt.Errorf("own %s: %w", m.Name, err)
	}
	switch err := r.Create(ctx, m); {
	case apierrors.IsAlreadyExists(err):
		// Made by an earlier pass that the cache does not show yet; the
		// next pass, once it does, takes it from there.
		return nil
	case err != nil:
		return fmt.Errorf("create member %s: %w", m.Name, err)
	}
	s.members = append(s.members, m)
	s.memberBases[m.Name] = m.DeepCopy()
	return nil
}

// newMemberName picks a member name: the cluster's name and a random suffix,
// so a member that replaces another never reuses its DNS name.
func newMemberName(cluster string, taken func(string) bool) string {
	for {
		if name := cluster + "-" + utilrand.String(5); !taken(name) {
			return name
		}
	}
}

// initialMemberName is the name of the i-th initial member: the cluster's
// name and a suffix derived from its UID, in the alphabet of random names.
// A cluster restored from a backup after a lost quorum gets names derived
// from the restore's start too: its old members' PVCs keep their names.
func initialMemberName(c *etcdv1.EtcdCluster, i int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	seed := string(c.UID)
	if rs := c.Status.Recovery; rs != nil && rs.Phase == etcdv1.RecoveryRestoring {
		seed = fmt.Sprintf("%s/restore-%d", c.UID, rs.StartedAt.Unix())
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", seed, i)))
	suffix := make([]byte, 5)
	for j := range suffix {
		suffix[j] = alphabet[int(sum[j])%len(alphabet)]
	}
	return c.Name + "-" + string(suffix)
}

// bootstrap starts a brand-new cluster: all initial members at once, with
// the full member list and a token unique to this EtcdCluster. No data
// exists yet, so this is safe. A crash halfway is finished from the member
// list the first initial member carries.
func (r *Reconciler) bootstrap(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.cluster.Status.ClusterID != "" {
		return ctrl.Result{}, nil
	}
	if s.restoringBackup() && len(s.members) > 0 {
		return ctrl.Result{}, nil // the restored member is made: the recovery goes on
	}
	restore, res, err := r.bootstrapSnapshot(ctx, s)
	if err != nil || !res.IsZero() {
		return res, err
	}
	var initial string
	for _, m := range s.members {
		if m.Spec.InitialClusterState == etcdv1.InitialClusterStateNew {
			initial = m.Spec.InitialCluster
			break
		}
	}
	if initial == "" {
		if len(s.members) > 0 {
			// Members exist but none bootstraps: they were added to a
			// cluster whose status lost its ID; observeEtcd finds it again.
			return ctrl.Result{}, nil
		}
		// The names come from the cluster's UID, not chance: a pass that
		// runs before the cache shows the members just created makes the
		// very same ones (their creation then finds them), never a second
		// set that would bootstrap a second etcd cluster.
		initialMembers := s.desired
		if restore != nil {
			// A restored cluster starts from one member made from the
			// snapshot; the others join it as learners.
			initialMembers = 1
		}
		initial = bootstrapCluster(s.cluster, initialMembers, r.Options.ClusterDomain)
		ctrl.LoggerFrom(ctx).Info("Bootstrapping a new etcd cluster", "initialCluster", initial)
	}
	for _, pair := range strings.Split(initial, ",") {
		name, _, _ := strings.Cut(pair, "=")
		if s.hasMember(name) {
			continue
		}
		spec := r.memberSpec(s, name, etcdv1.InitialClusterStateNew, initial)
		spec.Restore = restore
		if err := r.newMember(ctx, s, name, spec, nil); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// bootstrapSnapshot is the snapshot the first member of a new cluster is
// made from, if any: the one spec.bootstrap.restore names once the backup
// controller checked it, or a backup a quorum recovery restores. A
// non-zero Result while the first member has to wait.
func (r *Reconciler) bootstrapSnapshot(ctx context.Context, s *scope) (*etcdv1.MemberRestore, ctrl.Result, error) {
	switch {
	case s.restoringBackup():
		return r.restoredSnapshot(ctx, s)
	case restoring(s.cluster):
		rs, ok := s.cluster.CheckedRestore()
		if !ok {
			s.waiting, s.waitingMsg = etcdv1.ReasonWaitingForRestore, "The first member waits for the RestoreReady condition of this generation: the data controller checks the snapshot first"
			return nil, ctrl.Result{RequeueAfter: r.Options.HealthInterval}, nil
		}
		return &etcdv1.MemberRestore{Destination: rs.Destination, Key: rs.Key, SHA256: rs.SHA256, AgentImage: r.Options.AgentImage}, ctrl.Result{}, nil
	}
	return nil, ctrl.Result{}, nil
}

// bootstrapCluster is the --initial-cluster of a new cluster of n members,
// named after the cluster's UID (initialMemberName), never twice the same.
func bootstrapCluster(c *etcdv1.EtcdCluster, n int, domain string) string {
	pairs := make([][2]string, 0, n)
	for i := range n {
		name := initialMemberName(c, i)
		for k := 1; slices.ContainsFunc(pairs, func(p [2]string) bool { return p[0] == name }); k++ {
			name = initialMemberName(c, i+k*100)
		}
		pairs = append(pairs, [2]string{name, resources.PeerURL(c, name, domain)})
	}
	return resources.InitialCluster(pairs)
}
