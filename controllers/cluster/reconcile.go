package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/credentials"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// cacheLag is how soon a pass that found the cache behind this controller's
// own last write runs again, should that write's watch event not bring it
// back first.
const cacheLag = time.Second

// scope is what one reconcile of a cluster decides, beside what it knows
// of the cluster (view, view.go).
type scope struct {
	view

	base *etcdv1.EtcdCluster
	// memberBases holds each member as read, for the status apply of the
	// ones that changed.
	memberBases map[string]*etcdv1.EtcdMember

	client etcd.Client
	// etcdErr is the last unexpected etcd error, for the conditions.
	etcdErr error

	// progress says what membership change is under way, if any, and
	// waiting why it does not move on right now.
	progress, progressMsg string
	waiting, waitingMsg   string

	// quorumReport names, once etcd has no quorum, the members gone and
	// what each reachable member holds.
	quorumReport string

	// plan is how the members get to spec.version (prepareVersion).
	plan versionPlan
	// stuck says why a rollout stopped, for the Degraded condition.
	stuck string
	// foreign names the objects under names the cluster needs (its
	// Services, its PDB) that it does not own: they are left as they are.
	foreign []string

	// restoreFrom is the snapshot the first member of a cluster restored
	// from a backup after a lost quorum is made from (restoreFromBackup).
	restoreFrom *etcdv1.MemberRestore

	// afterWrite runs once this pass's status is written: events that
	// report what the status records, so that a pass whose write failed
	// (and is done again) does not report it twice.
	afterWrite []func()

	// written records the writes of this pass (Reconciler.written).
	written *kube.Written
}

// Reconcile drives an EtcdCluster towards its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	if r.Options.Observe != nil {
		defer r.Options.Observe(req.String())()
	}
	c := &etcdv1.EtcdCluster{}
	if err := r.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.Etcd.Forget(req.String())
			dbSizes.Delete(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, c)
	}
	if r.written.Behind(c) {
		return ctrl.Result{RequeueAfter: cacheLag}, nil
	}
	if err := kube.AddFinalizer(ctx, r.Client, ControllerName, c, etcdv1.ClusterFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	s, err := r.newScope(ctx, c)
	if err != nil || s == nil {
		return ctrl.Result{RequeueAfter: cacheLag}, err
	}
	defer func() {
		setStatus(s)
		err := r.applyStatuses(ctx, s)
		if err == nil {
			for _, f := range s.afterWrite {
				f()
			}
		}
		retErr = errors.Join(retErr, err)
	}()
	return kube.Run(ctx, s, r.steps(s)...)
}

// steps are the steps of one pass:
//
//  1. Services and PDB; 2. PVCs follow spec.storage.size;
//  3. wait for the certificates of a new cluster (and for the checked
//     snapshot of a restored one; or release the members of a cluster
//     restored from a backup after a lost quorum: recovery.go),
//  4. bootstrap it; 5. learn etcd's view (and recover a lost quorum:
//     recovery.go), and put back into the client Service a member whose
//     defragmentation cannot go on now (maintenance.go);
//  6. wait for the certificates of this generation; 7. finish removals;
//  8. replace lost and corrupt members; 9. plan the version change (enable or cancel
//     an etcd downgrade); 10. scale down; 11. scale up: create the
//     EtcdMember, 12. add it as a learner, 13. promote it; 14. roll the
//     spec out to the members one at a time (rollout.go); 15. finish a
//     quorum recovery; 16. defragment members and repair a NOSPACE alarm
//     (maintenance.go); 17. come back for a health check.
//
// Scaling goes before the rollout: see rollout.go for why. A suspended
// cluster runs 1-2 only: its Pods are stopped. While it is being
// suspended, a change under way ends (7, 12, 13) and none starts.
func (r *Reconciler) steps(s *scope) []kube.Step[*scope] {
	switch {
	case s.suspended:
		return []kube.Step[*scope]{r.ensureServices, r.ensurePDB, r.syncStorage}
	case s.suspending:
		return []kube.Step[*scope]{r.ensureServices, r.ensurePDB, r.syncStorage, r.waitForTLS(true), r.waitForRestore,
			r.bootstrap, r.observeEtcd, r.undrain, r.waitForTLS(false), r.finishRemovals, r.addLearners, r.promoteLearners, r.healthCheckLater}
	}
	return []kube.Step[*scope]{r.ensureServices, r.ensurePDB, r.syncStorage, r.waitForTLS(true), r.waitForRestore,
		r.restoreFromBackup, r.bootstrap, r.observeEtcd, r.undrain, r.holdForUndecodable, r.continueRecovery, r.waitForTLS(false), r.finishRemovals, r.replaceLostMembers, r.replaceCorruptMembers, r.prepareVersion,
		r.scaleDown, r.scaleUp, r.addLearners, r.promoteLearners, r.rollout, r.finishRecovery, r.maintain, r.healthCheckLater}
}

func (r *Reconciler) newScope(ctx context.Context, c *etcdv1.EtcdCluster) (*scope, error) {
	list := &etcdv1.EtcdMemberList{}
	if err := r.List(ctx, list, kube.OfCluster(c.Namespace, c.Name, kube.WithUndecodable)...); err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	s := &scope{
		view: view{cluster: c, desired: int(resources.Replicas(c)), health: map[uint64]etcd.Status{}},
		base: c.DeepCopy(), memberBases: map[string]*etcdv1.EtcdMember{}, written: &r.written,
	}
	if c.Spec.Suspend {
		// Once True, Suspended stays True while spec.suspend does (the
		// backup controller restamps it for later generations).
		s.suspended = meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1.ConditionSuspended)
		s.suspending = !s.suspended
	}
	if m := c.Status.Maintenance; m != nil && m.Defrag != nil && m.Defrag.Phase == etcdv1.DefragDefragmenting && r.Long.busy(c, defragKey(m.Defrag)) {
		s.defragging = m.Defrag.Member
	}
	for i := range list.Items {
		m := &list.Items[i]
		if !metav1.IsControlledBy(m, c) {
			continue
		}
		if etcdv1.Undecodable(m) != "" {
			s.undecodable = append(s.undecodable, m.Name)
			continue
		}
		if r.written.Behind(m) {
			// The cache has not seen this controller's last write to the
			// member yet: its event brings the cluster back.
			return nil, nil
		}
		s.members = append(s.members, m)
		s.memberBases[m.Name] = m.DeepCopy()
	}
	slices.SortFunc(s.members, func(a, b *etcdv1.EtcdMember) int {
		if d := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return s, nil
}

// holdForUndecodable stops the pass while an EtcdMember of the cluster
// cannot be decoded (a value an older CRD let through; the undecodable
// controller reports it on the member): the cluster would count one member
// too few and add another, or recover a lost quorum without fencing it.
// Nothing changes membership or restarts a member until it is fixed or
// deleted; Degraded names it.
func (r *Reconciler) holdForUndecodable(_ context.Context, s *scope) (ctrl.Result, error) {
	if len(s.undecodable) == 0 {
		return ctrl.Result{}, nil
	}
	s.waiting, s.waitingMsg = etcdv1.ReasonMemberUndecodable, fmt.Sprintf("No membership change, rollout or recovery while EtcdMember %s cannot be decoded (see its Undecodable event): fix it with kubectl edit or delete it", strings.Join(s.undecodable, ", "))
	return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
}

// patchStatuses writes the cluster's status and that of each member whose
// status this reconcile changed.
func (r *Reconciler) applyStatuses(ctx context.Context, s *scope) error {
	var errs []error
	for _, m := range s.members {
		if base, ok := s.memberBases[m.Name]; ok {
			rv, err := kube.ApplyStatus(ctx, r.Client, ControllerName, base, m)
			errs = append(errs, client.IgnoreNotFound(err))
			if rv != "" {
				r.written.Record(m, rv)
			}
		}
	}
	rv, err := kube.ApplyStatus(ctx, r.Client, ControllerName, s.base, s.cluster)
	if rv != "" {
		r.written.Record(s.cluster, rv)
	}
	return errors.Join(append(errs, err)...)
}

// createOwned creates obj owned by the cluster; one that exists is fine
// if the cluster owns it, and recorded as foreign otherwise.
func (r *Reconciler) createOwned(ctx context.Context, s *scope, obj client.Object) error {
	if err := controllerutil.SetControllerReference(s.cluster, obj, r.Scheme()); err != nil {
		return fmt.Errorf("own %s: %w", obj.GetName(), err)
	}
	err := r.Create(ctx, obj)
	if err == nil || !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
		}
		return nil
	}
	if r.APIReader == nil {
		return nil
	}
	// Not in the cache, yet there: another's, or ours not seen yet.
	have := obj.DeepCopyObject().(client.Object)
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), have); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.ownedOrForeign(have)
	return nil
}

// ownedOrForeign says whether the cluster owns obj, and records it as
// foreign when it does not: the operator never changes an object it does
// not own, whatever its name.
func (s *scope) ownedOrForeign(obj client.Object) bool {
	if metav1.IsControlledBy(obj, s.cluster) {
		return true
	}
	kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
	s.foreign = append(s.foreign, fmt.Sprintf("%s %s", kind, obj.GetName()))
	return false
}

// ensureServices creates the peer and client Services and keeps their
// selector and ports.
func (r *Reconciler) ensureServices(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	for _, svc := range []struct {
		name string
		want func(have *corev1.Service) (*corev1.Service, error)
	}{
		{resources.PeerServiceName(c.Name), func(*corev1.Service) (*corev1.Service, error) { return resources.PeerService(c), nil }},
		{resources.ClientServiceName(c.Name), func(have *corev1.Service) (*corev1.Service, error) {
			var err error
			s.servingOnly, err = r.selectsServing(ctx, s, have)
			return resources.ClientService(c, s.servingOnly), err
		}},
	} {
		have := &corev1.Service{}
		err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: svc.name}, have)
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("get service %s: %w", svc.name, err)
		}
		found := err == nil
		if !found {
			have = nil
		}
		want, err := svc.want(have)
		switch {
		case err != nil:
			return ctrl.Result{}, err
		case !found:
			if err := r.createOwned(ctx, s, want); err != nil {
				return ctrl.Result{}, err
			}
		case !s.ownedOrForeign(have):
		case !servicesMatch(have, want):
			have.Spec.Selector, have.Spec.Ports, have.Spec.PublishNotReadyAddresses = want.Spec.Selector, want.Spec.Ports, want.Spec.PublishNotReadyAddresses
			if err := r.Update(ctx, have); err != nil {
				return ctrl.Result{}, fmt.Errorf("update service %s: %w", want.Name, err)
			}
		}
	}
	return ctrl.Result{}, nil
}

// selectsServing says whether the client Service (have, nil before it
// exists) may select on the serving label: it does already, or every
// member Pod carries the label.
func (r *Reconciler) selectsServing(ctx context.Context, s *scope, have *corev1.Service) (bool, error) {
	if have != nil && have.Spec.Selector[etcdv1.ServingLabel] == "true" {
		return true, nil
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, kube.OfCluster(s.cluster.Namespace, s.cluster.Name, client.HasLabels{etcdv1.MemberLabel})...); err != nil {
		return false, fmt.Errorf("list pods: %w", err)
	}
	for _, p := range pods.Items {
		if _, ok := p.Labels[etcdv1.ServingLabel]; !ok {
			return false, nil
		}
	}
	return true, nil
}

func servicesMatch(have, want *corev1.Service) bool {
	if have.Spec.PublishNotReadyAddresses != want.Spec.PublishNotReadyAddresses || len(have.Spec.Ports) != len(want.Spec.Ports) {
		return false
	}
	for k, v := range want.Spec.Selector {
		if have.Spec.Selector[k] != v {
			return false
		}
	}
	for i, p := range want.Spec.Ports {
		h := have.Spec.Ports[i]
		if h.Name != p.Name || h.Port != p.Port || h.TargetPort != p.TargetPort {
			return false
		}
	}
	return len(have.Spec.Selector) == len(want.Spec.Selector)
}

// ensurePDB keeps a PodDisruptionBudget that lets one member go at a time
// (resources.PDB): it selects the cluster's Pods by the cluster's labels
// alone, so that it survives a move to another shard, and counts the
// voters etcd listed last, not spec.replicas.
func (r *Reconciler) ensurePDB(ctx context.Context, s *scope) (ctrl.Result, error) {
	voters := 0
	for _, ms := range s.cluster.Status.Members {
		if ms.Role == etcdv1.RoleVoter {
			voters++
		}
	}
	want := resources.PDB(s.cluster, voters)
	have := want.DeepCopy()
	err := r.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, r.createOwned(ctx, s, want)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get pdb: %w", err)
	case !s.ownedOrForeign(have):
	case have.Spec.MinAvailable == nil || *have.Spec.MinAvailable != *want.Spec.MinAvailable ||
		!equality.Semantic.DeepEqual(have.Spec.Selector, want.Spec.Selector):
		have.Spec.MinAvailable, have.Spec.Selector = want.Spec.MinAvailable, want.Spec.Selector
		if err := r.Update(ctx, have); err != nil {
			return ctrl.Result{}, fmt.Errorf("update pdb: %w", err)
		}
	}
	return ctrl.Result{}, nil
}

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
		if _, ok := c.TLSSecrets(); ok || (c.Spec.TLS.Disabled && kube.IsTrue(c.Status.Conditions, etcdv1.ConditionTLSReady, c.Generation)) {
			return ctrl.Result{}, nil
		}
		s.waiting, s.waitingMsg = etcdv1.ReasonWaitingForTLS, "Membership changes wait for the TLSReady condition of this generation (set by the tls controller)"
		// The condition's change wakes this controller; the requeue is a
		// backstop only.
		return ctrl.Result{RequeueAfter: r.Options.HealthInterval}, nil
	}
}

// newMember creates an EtcdMember; its existence is the persisted intent.
func (r *Reconciler) newMember(ctx context.Context, s *scope, name string, spec etcdv1.EtcdMemberSpec) error {
	m := &etcdv1.EtcdMember{}
	m.Name, m.Namespace = name, s.cluster.Namespace
	m.Labels = resources.ObjectLabels(s.cluster)
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
	restore := s.restoreFrom
	switch {
	case restore == nil && s.restoringBackup():
		return ctrl.Result{}, nil // restoreFromBackup found no snapshot yet
	case restore == nil && restoring(s.cluster):
		rs, ok := s.cluster.CheckedRestore()
		if !ok {
			s.waiting, s.waitingMsg = etcdv1.ReasonWaitingForRestore, "The first member waits for the RestoreReady condition of this generation: the backup controller checks the snapshot first"
			return ctrl.Result{RequeueAfter: r.Options.HealthInterval}, nil
		}
		restore = &etcdv1.MemberRestore{Destination: rs.Destination, Key: rs.Key, SHA256: rs.SHA256, AgentImage: r.Options.AgentImage}
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
		pairs := make([][2]string, 0, initialMembers)
		for i := range initialMembers {
			name := initialMemberName(s.cluster, i)
			for n := 1; slices.ContainsFunc(pairs, func(p [2]string) bool { return p[0] == name }); n++ {
				name = initialMemberName(s.cluster, i+n*100)
			}
			pairs = append(pairs, [2]string{name, resources.PeerURL(s.cluster, name, r.Options.ClusterDomain)})
		}
		initial = resources.InitialCluster(pairs)
		ctrl.LoggerFrom(ctx).Info("Bootstrapping a new etcd cluster", "initialCluster", initial)
	}
	for _, pair := range strings.Split(initial, ",") {
		name, _, _ := strings.Cut(pair, "=")
		if s.hasMember(name) {
			continue
		}
		spec := r.memberSpec(s, name, etcdv1.InitialClusterStateNew, initial)
		spec.Restore = restore
		if err := r.newMember(ctx, s, name, spec); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// observeEtcd asks etcd for its members and each member for its health.
func (r *Reconciler) observeEtcd(ctx context.Context, s *scope) (ctrl.Result, error) {
	if len(s.members) == 0 || (s.cluster.Status.ClusterID == "" && !s.anyMemberReady()) {
		// While bootstrapping, etcd cannot answer before a member is ready
		// (readiness needs a quorum); that member's Ready condition wakes us.
		return ctrl.Result{}, nil
	}
	// Learners answer most requests with "rpc not supported for learner":
	// the client talks to the members that vote (as etcd said last), or
	// to all while none is known to.
	endpoints := make([]string, 0, len(s.members))
	for _, m := range s.members {
		if m.Status.Role != etcdv1.RoleLearner {
			endpoints = append(endpoints, m.Spec.ClientURL)
		}
	}
	if len(endpoints) == 0 {
		for _, m := range s.members {
			endpoints = append(endpoints, m.Spec.ClientURL)
		}
	}
	creds, err := credentials.Load(ctx, r.Client, s.cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	cli, err := r.Etcd.Get(ctx, client.ObjectKeyFromObject(s.cluster).String(), endpoints, creds)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.client = cli
	// MemberList needs a quorum and waits for one until its deadline. Once
	// the last pass found the quorum lost, a member that answers does so
	// in milliseconds, so each pass of a recovery need not wait the full
	// etcd timeout to learn it is still lost.
	timeout := r.Options.EtcdTimeout
	if a := meta.FindStatusCondition(s.cluster.Status.Conditions, etcdv1.ConditionAvailable); a != nil && (a.Reason == etcdv1.ReasonQuorumLost || a.Reason == etcdv1.ReasonRestoringBackup) {
		timeout = min(timeout, 2*r.Options.StatusTimeout)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	id, list, err := cli.MemberList(tctx)
	if err != nil {
		s.etcdErr = err
		if s.cluster.Status.ClusterID == "" {
			// Still bootstrapping: the members' Pods becoming ready wake us.
			return ctrl.Result{}, nil
		}
		ctrl.LoggerFrom(ctx).Info("etcd does not answer", "error", err.Error())
		r.reportQuorumLoss(ctx, s)
		s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, fmt.Sprintf("Membership changes wait until etcd answers again: %v", err)
		if s.cluster.Spec.Suspend || len(s.undecodable) > 0 {
			// An undecodable member may be one of the voters a recovery
			// would have to fence: none starts (holdForUndecodable).
			return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
		}
		return r.recoverQuorum(ctx, s)
	}
	s.formed, s.clusterID, s.etcdList = true, id, list
	if s.cluster.Status.ClusterID == "" {
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "Bootstrapped", "Bootstrap", "etcd cluster %s formed with %d members", etcd.FormatID(id), len(list))
	}
	s.cluster.Status.ClusterID = etcd.FormatID(id)

	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, em := range list {
		if len(em.ClientURLs) == 0 {
			continue
		}
		wg.Go(func() {
			// A panic here would end the process, not the pass (the
			// controller recovers only the reconcile's own goroutine):
			// the member counts as not answering, and the pass says why.
			defer func() {
				if p := recover(); p != nil {
					ctrl.LoggerFrom(ctx).Error(fmt.Errorf("%v", p), "Panic in a member status call", "member", em.Name, "stack", string(debug.Stack()))
					mu.Lock()
					defer mu.Unlock()
					s.etcdErr = errors.Join(s.etcdErr, fmt.Errorf("status of member %s: panic: %v", em.Name, p))
				}
			}()
			sctx, cancel := context.WithTimeout(tctx, r.Options.StatusTimeout)
			defer cancel()
			st, err := cli.Status(sctx, em.ClientURLs[0])
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			s.health[em.ID] = st
			if st.Leader != 0 && !st.IsLearner {
				s.leader = st.Leader
			}
		})
	}
	wg.Wait()

	recordDBSizes(s)
	r.observeAlarms(ctx, s)

	// Record what etcd says of each EtcdMember: its ID and role. A member
	// added before a crash is recognised here by its peer URL.
	for _, m := range s.members {
		if em, ok := findByPeerURL(list, m.Spec.PeerURL); ok {
			m.Status.MemberID = etcd.FormatID(em.ID)
			m.Status.Role = etcdv1.RoleVoter
			if em.IsLearner {
				m.Status.Role = etcdv1.RoleLearner
			}
		}
	}
	return ctrl.Result{}, nil
}

func findByPeerURL(list []etcd.Member, peerURL string) (etcd.Member, bool) {
	for _, em := range list {
		if slices.Contains(em.PeerURLs, peerURL) {
			return em, true
		}
	}
	return etcd.Member{}, false
}

func (r *Reconciler) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.Options.EtcdTimeout)
}

// notYet turns etcd's "not now" answers into a retry with a reason.
func (r *Reconciler) notYet(s *scope, err error, reason, msg string) (ctrl.Result, error) {
	if errors.Is(err, etcd.ErrNotYet) || errors.Is(err, etcd.ErrUnreachable) {
		s.waiting, s.waitingMsg = reason, fmt.Sprintf("%s: %v", msg, err)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	s.etcdErr = err
	return ctrl.Result{}, fmt.Errorf("%s: %w", msg, err)
}
