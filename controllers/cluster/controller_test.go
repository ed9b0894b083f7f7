package cluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

const clusterName = "demo"

// defaultVersion is the version of the clusters the tests create, and the
// one the fake etcd's members run unless a test says otherwise.
const defaultVersion = "3.6.16"

func TestEnvClusterController(t *testing.T) {
	c, factory, reads := startSuite(t)
	for name, test := range map[string]func(*testing.T, *env){
		"Bootstrap":                        testBootstrap,
		"ScaleUpAndDown":                   testScaleUpAndDown,
		"ScaleDownWaitsForQuorum":          testScaleDownWithoutQuorum,
		"RemovalThatBreaksQuorumWaits":     testRemovalThatBreaksQuorum,
		"RemovingTheLeaderMovesLeadership": testRemoveLeader,
		"ScaleSubresource":                 testScaleSubresource,
		"DeleteReleasesMembers":            testDelete,
		"DeleteRetainKeepsVolumes":         testDeleteRetain,
		"RollingUpgrade":                   testRollingUpgrade,
		"RestoreFromBackupAfterLoss":       testRestoreFromBackup,
		"StorageReplacement":               testStorageReplacement,
		"IdleClusterReadsNoSecret":         testIdleReadsNoSecret,
		"ServiceDriftRepaired":             testServiceDrift,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, &env{t: t, c: c, factory: factory, reads: reads, ns: newNamespace(t, c)})
		})
	}
}

// env is one test's view: its namespace, its EtcdCluster and its fake etcd.
type env struct {
	t       *testing.T
	c       client.Client
	factory *etcd.FakeFactory
	// reads counts what the controllers read past the cache.
	reads *testenv.Reads
	ns    string
}

func (e *env) key() client.ObjectKey { return client.ObjectKey{Namespace: e.ns, Name: clusterName} }

// fake is the fake etcd the controller talks to for this test's cluster.
func (e *env) fake() *etcd.Fake { return e.factory.Cluster(e.key().String()) }

// testBootstrap: a new EtcdCluster gets its Services, PDB and initial
// members at once; it is Available once etcd answers.
func testBootstrap(t *testing.T, e *env) {
	cl := e.createCluster(3)

	// (a) Before etcd answers: the objects, and three initial members that
	// bootstrap together.
	ms := e.waitMembers(3, func(ms []etcdv1.EtcdMember) error {
		for _, m := range ms {
			if err := initialUnregistered(&m); err != nil {
				return err
			}
		}
		return nil
	})
	cl = e.getCluster()
	initial := ms[0].Spec.InitialCluster
	for _, m := range ms {
		switch {
		case m.Spec.InitialClusterState != etcdv1.InitialClusterStateNew:
			t.Errorf("%s: initialClusterState = %s, want New", m.Name, m.Spec.InitialClusterState)
		case m.Spec.InitialCluster != initial:
			t.Errorf("%s: initialCluster = %q, want the same as %s: %q", m.Name, m.Spec.InitialCluster, ms[0].Name, initial)
		case !strings.Contains(initial, m.Name+"="+m.Spec.PeerURL):
			t.Errorf("initialCluster %q lacks %s=%s", initial, m.Name, m.Spec.PeerURL)
		case m.Spec.PeerURL != resources.PeerURL(cl, m.Name, "cluster.local"):
			t.Errorf("%s: peerURL = %q", m.Name, m.Spec.PeerURL)
		case m.Spec.ClusterToken != string(cl.UID):
			t.Errorf("%s: clusterToken = %q, want the cluster's UID %s", m.Name, m.Spec.ClusterToken, cl.UID)
		case m.Spec.Image != "quay.io/coreos/etcd:v3.6.16":
			t.Errorf("%s: image = %q", m.Name, m.Spec.Image)
		case !metav1.IsControlledBy(&m, cl):
			t.Errorf("%s: owners = %v, want controlled by the cluster", m.Name, m.OwnerReferences)
		case !controllerutil.ContainsFinalizer(&m, etcdv1.MemberFinalizer):
			t.Errorf("%s: finalizers = %v, want %s", m.Name, m.Finalizers, etcdv1.MemberFinalizer)
		}
	}
	if n := strings.Count(initial, ","); n != 2 {
		t.Errorf("initialCluster %q has %d members, want 3", initial, n+1)
	}
	e.waitCluster("Bootstrapping", func(cl *etcdv1.EtcdCluster) error {
		return conditions(cl,
			cond{etcdv1.ConditionAvailable, metav1.ConditionFalse, etcdv1.ReasonBootstrapping},
			cond{etcdv1.ConditionProgressing, metav1.ConditionTrue, etcdv1.ReasonBootstrapping})
	})
	if !controllerutil.ContainsFinalizer(cl, etcdv1.ClusterFinalizer) {
		t.Errorf("cluster finalizers = %v, want %s", cl.Finalizers, etcdv1.ClusterFinalizer)
	}
	// etcd cannot answer before a member is ready, so it is not asked.
	if n := e.fake().Calls("MemberList"); n != 0 {
		t.Errorf("MemberList called %d times before any member was Ready, want none", n)
	}

	peer := &corev1.Service{}
	e.get(resources.PeerServiceName(clusterName), peer)
	switch {
	case peer.Spec.ClusterIP != corev1.ClusterIPNone:
		t.Errorf("peer Service clusterIP = %q, want None (headless)", peer.Spec.ClusterIP)
	case !peer.Spec.PublishNotReadyAddresses:
		t.Errorf("peer Service does not publish not-ready addresses: members could not find each other to start")
	case !labels.Equals(peer.Spec.Selector, resources.ClusterLabels(clusterName)):
		t.Errorf("peer Service selector = %v", peer.Spec.Selector)
	case !hasPorts(peer, etcdv1.ClientPort, etcdv1.PeerPort):
		t.Errorf("peer Service ports = %v", peer.Spec.Ports)
	case !metav1.IsControlledBy(peer, cl):
		t.Errorf("peer Service owners = %v", peer.OwnerReferences)
	}
	svc := &corev1.Service{}
	e.get(resources.ClientServiceName(clusterName), svc)
	switch {
	case svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.PublishNotReadyAddresses:
		t.Errorf("client Service must balance over ready members only: %+v", svc.Spec)
	case !labels.Equals(svc.Spec.Selector, resources.ClientService(cl, true).Spec.Selector) || svc.Spec.Selector[etcdv1.ServingLabel] != "true":
		// A new cluster has no Pod without the serving label.
		t.Errorf("client Service selector = %v, want the cluster's labels and %s=true", svc.Spec.Selector, etcdv1.ServingLabel)
	case !hasPorts(svc, etcdv1.ClientPort):
		t.Errorf("client Service ports = %v", svc.Spec.Ports)
	case !metav1.IsControlledBy(svc, cl):
		t.Errorf("client Service owners = %v", svc.OwnerReferences)
	}
	e.waitPDB(2)

	// (b) etcd forms the cluster; the member controller reports the Pods
	// ready, which is also what wakes the cluster controller.
	e.bootstrapFake(ms)
	e.setReady(ms...)
	cl = e.waitConverged(3)
	if cl.Status.ClusterID != etcd.FormatID(0xc1a5) {
		t.Errorf("status.clusterID = %q, want the fake's %s", cl.Status.ClusterID, etcd.FormatID(0xc1a5))
	}
	if cl.Status.Replicas != 3 || cl.Status.ReadyReplicas != 3 {
		t.Errorf("status replicas/ready = %d/%d, want 3/3", cl.Status.Replicas, cl.Status.ReadyReplicas)
	}
	if n := countFunc(cl.Status.Members, func(m etcdv1.ClusterMemberStatus) bool { return m.Leader }); n != 1 {
		t.Errorf("status.members has %d leaders, want 1: %+v", n, cl.Status.Members)
	}
	if err := conditions(cl, cond{etcdv1.ConditionDegraded, metav1.ConditionFalse, etcdv1.ReasonMembersHealthy}); err != nil {
		t.Error(err)
	}
	ids := map[string]string{}
	for _, em := range e.fake().Members() {
		ids[em.Name] = etcd.FormatID(em.ID)
	}
	for _, m := range e.members() {
		if m.Status.MemberID != ids[m.Name] || m.Status.Role != etcdv1.RoleVoter {
			t.Errorf("%s: memberID/role = %q/%q, want %q/Voter", m.Name, m.Status.MemberID, m.Status.Role, ids[m.Name])
		}
		if err := registered(&m, etcdv1.ReasonInitialMember); err != nil {
			t.Errorf("%s after bootstrap: %v", m.Name, err)
		}
	}
	e.waitEvent("Bootstrapped", clusterName)
}

// testScaleUpAndDown: a member is added as a learner and promoted once it
// started; scaling down removes a follower, never the leader.
func testScaleUpAndDown(t *testing.T, e *env) {
	e.formCluster(3)
	fake := e.fake()

	// (c) Scale up: the new member joins as a learner.
	e.patchCluster(`{"spec":{"replicas":4}}`)
	var added etcdv1.EtcdMember
	e.waitMembers(4, func(ms []etcdv1.EtcdMember) error {
		for _, m := range ms {
			if m.Spec.InitialClusterState != etcdv1.InitialClusterStateExisting {
				continue
			}
			added = m
			if m.Status.MemberID == "" || m.Status.Role != etcdv1.RoleLearner {
				return fmt.Errorf("new member %s: memberID/role = %q/%q, want an ID and Learner", m.Name, m.Status.MemberID, m.Status.Role)
			}
			return registered(&m, etcdv1.ReasonMemberAdded)
		}
		return fmt.Errorf("no member with initialClusterState Existing")
	})
	for _, m := range e.members() {
		if !strings.Contains(added.Spec.InitialCluster, m.Name+"="+m.Spec.PeerURL) {
			t.Errorf("initialCluster of the new member %q lacks %s", added.Spec.InitialCluster, m.Name)
		}
	}
	em, ok := fakeMember(fake, added.Spec.PeerURL)
	if !ok || !em.IsLearner || etcd.FormatID(em.ID) != added.Status.MemberID {
		t.Fatalf("fake etcd has %+v for the new member, want a learner with ID %s", em, added.Status.MemberID)
	}
	if n := fake.Calls("MemberAddAsLearner"); n != 1 {
		t.Errorf("MemberAddAsLearner called %d times, want once", n)
	}
	e.waitCluster("PromotingLearner", func(cl *etcdv1.EtcdCluster) error {
		return conditions(cl, cond{etcdv1.ConditionProgressing, metav1.ConditionTrue, etcdv1.ReasonPromotingLearner})
	})
	// One member down at a time of etcd's voters: the learner does not count.
	e.waitPDB(2)
	e.waitEvent("MemberAdded", clusterName)

	// The learner's etcd starts: it is promoted.
	fake.Start(added.Spec.PeerURL, added.Name, added.Spec.ClientURL, true)
	e.waitConverged(4)
	e.waitPDB(3)
	if m := e.getMember(added.Name); m.Status.Role != etcdv1.RoleVoter {
		t.Errorf("new member role = %q, want Voter", m.Status.Role)
	}
	if em, _ := fakeMember(fake, added.Spec.PeerURL); em.IsLearner {
		t.Errorf("new member is still a learner in etcd")
	}
	e.waitEvent("MemberPromoted", clusterName)

	// (d) Scale down: one follower leaves etcd, then its EtcdMember goes.
	before := e.members()
	leader := fake.Leader()
	e.patchCluster(`{"spec":{"replicas":3}}`)
	e.waitConverged(3)
	after := e.members()
	if len(after) != 3 || len(fake.Members()) != 3 {
		t.Fatalf("after scaling down: %d EtcdMembers and %d etcd members, want 3 and 3", len(after), len(fake.Members()))
	}
	var removed etcdv1.EtcdMember
	for _, m := range before {
		if !slices.ContainsFunc(after, func(a etcdv1.EtcdMember) bool { return a.Name == m.Name }) {
			removed = m
		}
	}
	if removed.Name == "" {
		t.Fatalf("no EtcdMember went: before %v, after %v", names(before), names(after))
	}
	if removed.Status.MemberID == etcd.FormatID(leader) {
		t.Errorf("removed member %s was the leader", removed.Name)
	}
	if _, ok := fakeMember(fake, removed.Spec.PeerURL); ok {
		t.Errorf("removed member %s is still in etcd", removed.Name)
	}
	if n := fake.Calls("MemberRemove"); n != 1 {
		t.Errorf("MemberRemove called %d times, want once", n)
	}
	if n := fake.Calls("MoveLeader"); n != 0 {
		t.Errorf("MoveLeader called %d times removing a follower, want none", n)
	}
	e.waitPDB(2)
	e.waitEvent("MemberRemoved", clusterName)
}

// testScaleDownWithoutQuorum: with two of three members down, etcd has no
// quorum, so nothing can be removed: the scale-down waits, and goes on
// once a quorum is back, removing a member that is down.
func testScaleDownWithoutQuorum(t *testing.T, e *env) {
	ms := e.formCluster(3)
	fake := e.fake()
	leaderName := fakeLeaderName(fake)
	var sick []string
	for _, m := range ms {
		if m.Name != leaderName {
			sick = append(sick, m.Name)
			fake.SetHealthy(m.Name, false)
		}
	}

	e.patchCluster(`{"spec":{"replicas":2}}`)
	cl := e.waitCluster("QuorumLost for the new generation", func(cl *etcdv1.EtcdCluster) error {
		if err := conditions(cl, cond{etcdv1.ConditionAvailable, metav1.ConditionFalse, etcdv1.ReasonQuorumLost}); err != nil {
			return err
		}
		return conditions(cl, cond{etcdv1.ConditionDegraded, metav1.ConditionTrue, etcdv1.ReasonEtcdError})
	})
	p := meta.FindStatusCondition(cl.Status.Conditions, etcdv1.ConditionProgressing)
	if p == nil || p.Status != metav1.ConditionTrue {
		t.Errorf("Progressing = %+v, want True while the scale-down waits", p)
	} else {
		t.Logf("Progressing while etcd has no quorum: %s: %s", p.Reason, p.Message)
	}
	if n := fake.Calls("MemberRemove"); n != 0 {
		t.Errorf("MemberRemove called %d times without a quorum, want none", n)
	}
	for _, m := range e.members() {
		if !m.DeletionTimestamp.IsZero() {
			t.Errorf("EtcdMember %s deleted while etcd has no quorum", m.Name)
		}
	}

	// One member is back: a quorum of two out of three. The member still
	// down is the one to go: removing it keeps the quorum.
	fake.SetHealthy(sick[0], true)
	e.waitConverged(2)
	if n := fake.Calls("MemberRemove"); n != 1 {
		t.Errorf("MemberRemove called %d times, want once", n)
	}
	left := names(e.members())
	if slices.Contains(left, sick[1]) || !slices.Contains(left, sick[0]) || !slices.Contains(left, leaderName) {
		t.Errorf("members left %v, want %s and %s (the member still down, %s, removed)", left, leaderName, sick[0], sick[1])
	}
	for _, em := range fake.Members() {
		if em.Name == sick[1] {
			t.Errorf("unhealthy member %s still in etcd", sick[1])
		}
	}
}

// testRemovalThatBreaksQuorum: a member deleted by hand while another is
// down is not removed from etcd until that one is back: two voters of
// which one is down would have no quorum.
func testRemovalThatBreaksQuorum(t *testing.T, e *env) {
	ms := e.formCluster(3)
	fake := e.fake()
	leaderName := fakeLeaderName(fake)
	var followers []etcdv1.EtcdMember
	for _, m := range ms {
		if m.Name != leaderName {
			followers = append(followers, m)
		}
	}
	down, victim := followers[0], followers[1]
	fake.SetHealthy(down.Name, false)
	e.waitCluster("Degraded", func(cl *etcdv1.EtcdCluster) error {
		return conditions(cl, cond{etcdv1.ConditionDegraded, metav1.ConditionTrue, etcdv1.ReasonMembersUnhealthy})
	})

	if err := e.c.Delete(e.t.Context(), &victim); err != nil {
		t.Fatalf("delete EtcdMember %s: %v", victim.Name, err)
	}
	e.waitCluster("QuorumAtRisk", func(cl *etcdv1.EtcdCluster) error {
		return conditions(cl, cond{etcdv1.ConditionProgressing, metav1.ConditionTrue, etcdv1.ReasonQuorumAtRisk})
	})
	if n := fake.Calls("MemberRemove"); n != 0 {
		t.Errorf("MemberRemove called %d times while it would break the quorum, want none", n)
	}
	if m := e.getMember(victim.Name); !controllerutil.ContainsFinalizer(m, etcdv1.MemberFinalizer) {
		t.Errorf("EtcdMember %s released before it left etcd", victim.Name)
	}

	// The member that was down is back: the removal goes on, and a new
	// member replaces the removed one.
	fake.SetHealthy(down.Name, true)
	e.waitGone(victim.Name)
	if _, ok := fakeMember(fake, victim.Spec.PeerURL); ok {
		t.Errorf("%s is still in etcd", victim.Name)
	}
	e.startLearners(1)
	e.waitConverged(3)
}

// testRemoveLeader: the leader's member is removed only after it handed
// leadership to another voter.
func testRemoveLeader(t *testing.T, e *env) {
	e.formCluster(3)
	fake := e.fake()
	leaderID := fake.Leader()
	leader := e.getMember(fakeLeaderName(fake))

	if err := e.c.Delete(e.t.Context(), leader); err != nil {
		t.Fatalf("delete the leader's EtcdMember: %v", err)
	}
	e.waitGone(leader.Name)
	if n := fake.Calls("MoveLeader"); n != 1 {
		t.Errorf("MoveLeader called %d times, want once", n)
	}
	if fake.Leader() == leaderID || fake.Leader() == 0 {
		t.Errorf("leader is %s, want another member", etcd.FormatID(fake.Leader()))
	}
	if _, ok := fakeMember(fake, leader.Spec.PeerURL); ok {
		t.Errorf("old leader still in etcd")
	}
	e.waitEvent("LeaderMoved", clusterName)
	e.startLearners(1)
	e.waitConverged(3)
}

// testScaleSubresource: kubectl scale and autoscalers work through /scale;
// members are then added one at a time.
func testScaleSubresource(t *testing.T, e *env) {
	e.formCluster(1)
	cl := e.getCluster()
	scale := &autoscalingv1.Scale{}
	if err := e.c.SubResource("scale").Get(t.Context(), cl, scale); err != nil {
		t.Fatalf("get scale: %v", err)
	}
	wantSelector := labels.SelectorFromSet(resources.ClusterLabels(clusterName)).String()
	if scale.Spec.Replicas != 1 || scale.Status.Replicas != 1 || scale.Status.Selector != wantSelector {
		t.Errorf("scale = %+v, want 1 replica and selector %q", scale, wantSelector)
	}

	scale.Spec.Replicas = 3
	if err := e.c.SubResource("scale").Update(t.Context(), cl, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("update scale: %v", err)
	}
	if got := e.getCluster(); ptr.Deref(got.Spec.Replicas, 0) != 3 {
		t.Fatalf("spec.replicas = %v after scaling to 3", got.Spec.Replicas)
	}
	e.startLearners(2)
	e.waitConverged(3)
	if err := e.c.SubResource("scale").Get(t.Context(), cl, scale); err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if scale.Status.Replicas != 3 {
		t.Errorf("scale status.replicas = %d, want 3", scale.Status.Replicas)
	}
	if n := e.fake().Calls("MemberAddAsLearner"); n != 2 {
		t.Errorf("MemberAddAsLearner called %d times, want 2", n)
	}
}

// testDelete: a deleted cluster releases its members without removing them
// from etcd one by one, then itself.
func testDelete(t *testing.T, e *env) {
	ms := e.formCluster(3)
	fake := e.fake()
	cl := e.getCluster()
	if err := e.c.Delete(t.Context(), cl); err != nil {
		t.Fatalf("delete cluster: %v", err)
	}
	eventually(t, "cluster gone", func() error {
		err := e.c.Get(t.Context(), e.key(), &etcdv1.EtcdCluster{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get cluster: want NotFound, got %v", err)
	})
	// envtest runs no garbage collector: the members stay, released.
	for _, m := range ms {
		got := e.getMember(m.Name)
		if controllerutil.ContainsFinalizer(got, etcdv1.MemberFinalizer) {
			t.Errorf("%s still holds %s", m.Name, etcdv1.MemberFinalizer)
		}
		if !metav1.IsControlledBy(got, cl) {
			t.Errorf("%s lost its owner reference, which the garbage collector needs", m.Name)
		}
	}
	if n := fake.Calls("MemberRemove"); n != 0 {
		t.Errorf("MemberRemove called %d times deleting the whole cluster, want none", n)
	}
	if e.fake() == fake {
		t.Errorf("the etcd client of the deleted cluster was not forgotten")
	}
}

// testRestoreFromBackup: every member lost its data; the annotation
// latest-backup restores the newest complete backup into the same
// EtcdCluster: the old members keep their volumes and go without
// MemberRemove, a new etcd cluster starts from one member made from the
// snapshot, and grows back to 3. The test plays the member controller
// (Ready, VolumeRetained) and etcd (the restored member forms a new
// cluster, learners start).
func testRestoreFromBackup(t *testing.T, e *env) {
	ms := e.formCluster(3)
	oldID := e.getCluster().Status.ClusterID
	old := e.fake()
	b := &etcdv1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: e.ns, Labels: map[string]string{etcdv1.ClusterLabel: clusterName}},
		Spec:       etcdv1.EtcdBackupSpec{ClusterName: clusterName, Destination: etcdv1.BackupDestination{PVC: &etcdv1.PVCDestination{ClaimName: "backups"}}},
	}
	if err := e.c.Create(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	// The backup controller's part: Complete for its generation.
	b.Status = etcdv1.EtcdBackupStatus{Key: "nightly.db", SHA256: strings.Repeat("cd", 32), Revision: 500, StartTime: &metav1.Time{Time: time.Now()},
		Conditions: []metav1.Condition{{Type: etcdv1.ConditionComplete, Status: metav1.ConditionTrue, Reason: "SnapshotStored", ObservedGeneration: b.Generation, LastTransitionTime: metav1.Now()}}}
	if err := e.c.Status().Update(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		old.SetHealthy(m.Name, false)
	}
	for _, m := range ms {
		e.setReadyCondition(m.Name, metav1.ConditionFalse, etcdv1.ReasonDataLost, "PVC data-"+m.Name+" is gone")
	}
	e.waitCluster("QuorumLost", func(cl *etcdv1.EtcdCluster) error {
		return conditions(cl, cond{etcdv1.ConditionAvailable, metav1.ConditionFalse, etcdv1.ReasonQuorumLost})
	})
	e.patchCluster(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, etcdv1.RecoverQuorumAnnotation, etcdv1.RecoverFromLatestBackup))

	// The old members are asked to keep their volumes, then go.
	eventually(t, "old members released", func() error {
		var left []string
		for _, m := range ms {
			got := &etcdv1.EtcdMember{}
			err := e.c.Get(t.Context(), client.ObjectKeyFromObject(&m), got)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return err
			case !got.DeletionTimestamp.IsZero() && !meta.IsStatusConditionTrue(got.Status.Conditions, etcdv1.ConditionVolumeRetained):
				t.Fatalf("%s deleted before it kept its volume", got.Name)
			case got.Spec.DeletionPolicy == etcdv1.DeletionPolicyRetain && !kube.IsTrue(got.Status.Conditions, etcdv1.ConditionVolumeRetained, got.Generation):
				patch := client.MergeFrom(got.DeepCopy())
				meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionVolumeRetained, Status: metav1.ConditionTrue,
					Reason: etcdv1.ReasonNoVolume, Message: "set by the test", ObservedGeneration: got.Generation})
				if err := e.c.Status().Patch(t.Context(), got, patch); err != nil {
					return err
				}
			}
			left = append(left, fmt.Sprintf("%s (policy %q, deleting %v)", got.Name, got.Spec.DeletionPolicy, !got.DeletionTimestamp.IsZero()))
		}
		if len(left) > 0 {
			return fmt.Errorf("still there: %v", left)
		}
		return nil
	})
	first := e.waitMembers(1, func(got []etcdv1.EtcdMember) error {
		if got[0].Spec.Restore == nil {
			return fmt.Errorf("%s has no restore", got[0].Name)
		}
		return nil
	})[0]
	if r := first.Spec.Restore; r.Key != "nightly.db" || r.SHA256 != b.Status.SHA256 || r.Destination.PVC == nil || r.Destination.PVC.ClaimName != "backups" {
		t.Errorf("first member restores %+v, want the backup nightly", r)
	}
	if slices.Contains(names(ms), first.Name) || first.Spec.InitialClusterState != etcdv1.InitialClusterStateNew {
		t.Errorf("first member %s (state %s): want a new name, state new", first.Name, first.Spec.InitialClusterState)
	}
	if n := old.Calls("MemberRemove"); n != 0 {
		t.Errorf("MemberRemove called %d times on the cluster given up", n)
	}
	cl := e.waitCluster("restoring", func(cl *etcdv1.EtcdCluster) error {
		return conditions(cl, cond{etcdv1.ConditionAvailable, metav1.ConditionFalse, etcdv1.ReasonRestoringBackup})
	})
	if rs := cl.Status.Recovery; rs == nil || rs.Phase != etcdv1.RecoveryRestoring || rs.Backup != "nightly" || rs.Revision != 500 || cl.Status.ClusterID != "" {
		t.Fatalf("status.recovery %+v, cluster ID %q; want Restoring from nightly at 500, no ID", rs, cl.Status.ClusterID)
	}

	// The restored member forms a new cluster; it grows back to 3.
	e.fake().RestoreSnapshot([3]string{first.Name, first.Spec.PeerURL, first.Spec.ClientURL})
	e.setReady(first)
	e.startLearners(2)
	cl = e.waitConverged(3)
	eventually(t, "recovery done", func() error {
		cl = e.getCluster()
		if rs := cl.Status.Recovery; rs == nil || rs.Phase != etcdv1.RecoveryDone {
			return fmt.Errorf("recovery %+v", rs)
		}
		return nil
	})
	if cl.Status.ClusterID == "" || cl.Status.ClusterID == oldID {
		t.Errorf("cluster ID %q, want a new one (was %s)", cl.Status.ClusterID, oldID)
	}
	if _, ok := cl.Annotations[etcdv1.RecoverQuorumAnnotation]; ok {
		t.Errorf("annotation kept after the restore")
	}
	e.waitEvent("QuorumRecovered", clusterName)
}

// testRollingUpgrade: a minor upgrade gives the new version to one member
// at a time, followers first and the leader last, once leadership moved to
// a member already on the new version. A member whose Pod cannot run stops
// the rollout (Degraded, RolloutStuck), which goes on once it is Ready. The
// test plays the member controller (Ready for the member's new generation,
// as once its Pod runs the new spec) and etcd (the version it reports).
func testRollingUpgrade(t *testing.T, e *env) {
	const from, to = "3.5.35", "3.6.16"
	e.formClusterAt(from, 3)
	fake := e.fake()
	leader := fakeLeaderName(fake)
	if cl := e.getCluster(); cl.Status.Version != from {
		t.Fatalf("status.version = %q before the upgrade, want %s", cl.Status.Version, from)
	}
	before := map[string]int64{}
	for _, m := range e.members() {
		before[m.Name] = m.Generation
	}

	// (a) One follower takes the new spec, stamped with when its update
	// started; the others wait for it to be Ready on that spec.
	e.patchCluster(fmt.Sprintf(`{"spec":{"version":%q}}`, to))
	first := e.waitUpdating(to, nil)
	switch {
	case first.Name == leader:
		t.Errorf("the leader %s was updated first, want a follower", first.Name)
	case first.Generation == before[first.Name]:
		t.Errorf("%s: generation %d did not change with its spec", first.Name, first.Generation)
	case first.Spec.Image != resources.ImageFor(to, "quay.io/coreos/etcd"):
		t.Errorf("%s: image = %q, want the image of %s", first.Name, first.Spec.Image, to)
	}
	if _, err := time.Parse(time.RFC3339, first.Annotations[etcdv1.UpdateStartedAnnotation]); err != nil {
		t.Errorf("%s: %s = %q: %v", first.Name, etcdv1.UpdateStartedAnnotation, first.Annotations[etcdv1.UpdateStartedAnnotation], err)
	}
	e.waitRolling(first.Name, 1)
	consistently(t, "one member updated while it is not Ready on its new spec", func() error {
		if got := names(withVersion(e.members(), to)); !slices.Equal(got, []string{first.Name}) {
			return fmt.Errorf("members on %s: %v, want %s alone", to, got, first.Name)
		}
		return conditions(e.getCluster(), cond{etcdv1.ConditionAvailable, metav1.ConditionTrue, etcdv1.ReasonQuorumHealthy})
	})

	// (b) Its Pod cannot run: the rollout stops there and says so.
	e.setReadyCondition(first.Name, metav1.ConditionFalse, etcdv1.ReasonPodFailing, "ErrImagePull: test")
	e.waitCluster("RolloutStuck", func(cl *etcdv1.EtcdCluster) error {
		if err := conditions(cl,
			cond{etcdv1.ConditionDegraded, metav1.ConditionTrue, etcdv1.ReasonRolloutStuck},
			cond{etcdv1.ConditionProgressing, metav1.ConditionTrue, etcdv1.ReasonRollingUpdate},
			cond{etcdv1.ConditionAvailable, metav1.ConditionTrue, etcdv1.ReasonQuorumHealthy},
		); err != nil {
			return err
		}
		if msg := meta.FindStatusCondition(cl.Status.Conditions, etcdv1.ConditionDegraded).Message; !strings.Contains(msg, first.Name) || !strings.Contains(msg, "ErrImagePull: test") {
			return fmt.Errorf("Degraded message %q does not name %s and its failure", msg, first.Name)
		}
		return nil
	})
	if ev := e.waitEvent("RolloutStuck", clusterName); ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, first.Name) {
		t.Errorf("event RolloutStuck = %s %q, want a Warning naming %s", ev.Type, ev.Note, first.Name)
	}
	consistently(t, "no other member updated while the rollout is stuck", func() error {
		if got := names(withVersion(e.members(), to)); !slices.Equal(got, []string{first.Name}) {
			return fmt.Errorf("members on %s: %v, want %s alone", to, got, first.Name)
		}
		return nil
	})

	// (c) It recovers: the rollout goes on, each member once the one before
	// it is Ready on the new version, the leader last.
	var done []string
	for next := first; ; {
		fake.SetVersion(next.Name, to)
		e.setReadyCondition(next.Name, metav1.ConditionTrue, etcdv1.ReasonPodReady, "set by the test")
		done = append(done, next.Name)
		if len(done) == 3 {
			break
		}
		next = e.waitUpdating(to, done)
		if len(done) == 2 {
			if n := fake.Calls("MoveLeader"); n < 1 {
				t.Errorf("%s updated last with MoveLeader called %d times, want leadership moved first", next.Name, n)
			}
			if l := fakeLeaderName(fake); l == next.Name || !slices.Contains(done, l) {
				t.Errorf("leader is %s while %s is updated, want one of the updated members %v", l, next.Name, done)
			}
		}
		e.waitRolling(next.Name, len(done)+1)
	}
	if done[2] != leader {
		t.Errorf("update order %v, want the leader %s last", done, leader)
	}

	// (d) Every member runs the new version: the rollout is over.
	cl := e.waitConverged(3)
	switch {
	case cl.Status.Version != to:
		t.Errorf("status.version = %q, want %s", cl.Status.Version, to)
	case cl.Status.Rollout != nil:
		t.Errorf("status.rollout = %+v after the rollout, want none", cl.Status.Rollout)
	}
	if err := conditions(cl, cond{etcdv1.ConditionDegraded, metav1.ConditionFalse, etcdv1.ReasonMembersHealthy}); err != nil {
		t.Error(err)
	}
	for _, m := range e.members() {
		if _, ok := m.Annotations[etcdv1.UpdateStartedAnnotation]; ok || m.Spec.Version != to {
			t.Errorf("%s: version %s, annotations %v, want %s and no update in flight", m.Name, m.Spec.Version, m.Annotations, to)
		}
	}
	if l := fakeLeaderName(fake); l == leader {
		t.Errorf("%s still leads: leadership was not moved before updating it", leader)
	}
	e.waitEvent("LeaderMoved", clusterName)
	eventually(t, "a MemberUpdated event for every member", func() error {
		evs, err := e.events()
		if err != nil {
			return err
		}
		for _, name := range done {
			if !slices.ContainsFunc(evs, func(ev eventsv1.Event) bool {
				return ev.Reason == "MemberUpdated" && ev.Regarding.Name == clusterName && strings.Contains(ev.Note, "Member "+name+" ")
			}) {
				return fmt.Errorf("no MemberUpdated event for %s", name)
			}
		}
		return nil
	})
}

// testIdleReadsNoSecret: a calm cluster with TLS (the default) is polled
// at every health interval, and each poll builds its etcd client from the
// client Secret, whose data the cache does not hold. The Secret is read
// from the API server once, not at each poll: polls read none.
func testIdleReadsNoSecret(t *testing.T, e *env) {
	e.formCluster(1)
	secretReads := func() int { return e.reads.Count(&corev1.Secret{}, e.ns) }
	looks := func() int { return e.fake().Calls("MemberList") }
	// The passes that formed the cluster read its Secrets; then three
	// polls in a row read none.
	eventually(t, "three polls that read no Secret", func() error {
		n, l := secretReads(), looks()
		eventually(t, "three polls", func() error {
			if looks() < l+3 {
				return fmt.Errorf("%d polls", looks()-l)
			}
			return nil
		})
		if got := secretReads() - n; got != 0 {
			return fmt.Errorf("%d Secrets read over three polls", got)
		}
		return nil
	})
}

// testServiceDrift: someone changes the client Service's selector, ports
// and session affinity. The operator puts the selector and ports back from
// the cache's lean copy of the Service (it keeps neither the session
// affinity nor the cluster IP), with a patch of what changed: the cluster
// IP and the session affinity the lean copy does not hold stay as they
// are.
func testServiceDrift(t *testing.T, e *env) {
	e.formCluster(1)
	cl := &etcdv1.EtcdCluster{}
	if err := e.c.Get(t.Context(), e.key(), cl); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: e.ns, Name: resources.ClientServiceName(clusterName)}
	svc := &corev1.Service{}
	if err := e.c.Get(t.Context(), key, svc); err != nil {
		t.Fatal(err)
	}
	clusterIP := svc.Spec.ClusterIP
	want := resources.ClientService(cl, true).Spec
	changed := svc.DeepCopy()
	changed.Spec.Selector = map[string]string{"app": "someone-else"}
	changed.Spec.Ports[0].Port = 12379
	changed.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	if err := e.c.Update(t.Context(), changed); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the client Service's selector and ports put back", func() error {
		got := &corev1.Service{}
		if err := e.c.Get(t.Context(), key, got); err != nil {
			return err
		}
		switch {
		case !labels.Equals(got.Spec.Selector, want.Selector):
			return fmt.Errorf("selector %v, want %v", got.Spec.Selector, want.Selector)
		case got.Spec.Ports[0].Port != etcdv1.ClientPort:
			return fmt.Errorf("ports %v", got.Spec.Ports)
		case got.Spec.ClusterIP != clusterIP:
			return fmt.Errorf("cluster IP %q, was %q", got.Spec.ClusterIP, clusterIP)
		case got.Spec.SessionAffinity != corev1.ServiceAffinityClientIP:
			return fmt.Errorf("session affinity %q: a field the cache does not keep was overwritten", got.Spec.SessionAffinity)
		}
		return nil
	})
}

// --- helpers -------------------------------------------------------------

func (e *env) createCluster(replicas int32) *etcdv1.EtcdCluster {
	e.t.Helper()
	return e.createClusterAt(defaultVersion, replicas)
}

func (e *env) createClusterAt(version string, replicas int32) *etcdv1.EtcdCluster {
	e.t.Helper()
	cl := &etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: e.ns},
		Spec:       etcdv1.EtcdClusterSpec{Version: version, Replicas: &replicas},
	}
	if err := e.c.Create(e.t.Context(), cl); err != nil {
		e.t.Fatalf("create EtcdCluster: %v", err)
	}
	return cl
}

// formCluster creates a cluster and plays etcd and the member controller
// until it is Available and converged; it returns the members.
func (e *env) formCluster(replicas int32) []etcdv1.EtcdMember {
	e.t.Helper()
	return e.formClusterAt(defaultVersion, replicas)
}

// formClusterAt is formCluster on another version: the fake's members run
// it from their first answer, so the controller never sees another.
func (e *env) formClusterAt(version string, replicas int32) []etcdv1.EtcdMember {
	e.t.Helper()
	e.createClusterAt(version, replicas)
	ms := e.waitMembers(int(replicas), func(ms []etcdv1.EtcdMember) error {
		for _, m := range ms {
			if err := initialUnregistered(&m); err != nil {
				return err
			}
		}
		return nil
	})
	e.bootstrapFake(ms)
	for _, m := range ms {
		e.fake().SetVersion(m.Name, version)
	}
	e.setReady(ms...)
	e.waitConverged(int(replicas))
	return e.members()
}

// bootstrapFake forms the fake etcd from the members, the first leading.
func (e *env) bootstrapFake(ms []etcdv1.EtcdMember) {
	triples := make([][3]string, 0, len(ms))
	for _, m := range ms {
		triples = append(triples, [3]string{m.Name, m.Spec.PeerURL, m.Spec.ClientURL})
	}
	e.fake().Bootstrap(triples...)
}

// startLearners plays etcd for n new members in turn: it waits for a
// learner, checks it is the only one, and starts its etcd.
func (e *env) startLearners(n int) {
	e.t.Helper()
	fake := e.fake()
	for i := range n {
		var learner etcd.Member
		eventually(e.t, fmt.Sprintf("learner %d of %d", i+1, n), func() error {
			var learners []etcd.Member
			for _, em := range fake.Members() {
				if em.IsLearner {
					learners = append(learners, em)
				}
			}
			switch len(learners) {
			case 0:
				return fmt.Errorf("no learner in etcd")
			case 1:
				learner = learners[0]
				return nil
			}
			return fmt.Errorf("%d learners at once, want one at a time", len(learners))
		})
		for _, m := range e.members() {
			if slices.Contains(learner.PeerURLs, m.Spec.PeerURL) {
				if m.Spec.InitialClusterState != etcdv1.InitialClusterStateExisting {
					e.t.Errorf("learner %s has initialClusterState %s, want Existing", m.Name, m.Spec.InitialClusterState)
				}
				fake.Start(m.Spec.PeerURL, m.Name, m.Spec.ClientURL, true)
				e.setReady(m)
			}
		}
		eventually(e.t, "learner promoted", func() error {
			if em, _ := fakeMember(fake, learner.PeerURLs[0]); em.IsLearner {
				return fmt.Errorf("%s is still a learner", etcd.FormatID(em.ID))
			}
			return nil
		})
	}
}

// setReady plays the member controller: Ready True for the member's
// generation, with an optimistic lock, as it would once the Pod is ready.
func (e *env) setReady(ms ...etcdv1.EtcdMember) {
	e.t.Helper()
	for _, m := range ms {
		e.setReadyCondition(m.Name, metav1.ConditionTrue, etcdv1.ReasonPodReady, "set by the test")
	}
}

// setReadyCondition plays the member controller: the member's Ready
// condition for its current generation, with an optimistic lock.
func (e *env) setReadyCondition(member string, status metav1.ConditionStatus, reason, message string) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &etcdv1.EtcdMember{}
		if err := e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: member}, got); err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(got.DeepCopy(), client.MergeFromWithOptimisticLock{})
		meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{
			Type: etcdv1.ConditionReady, Status: status, ObservedGeneration: got.Generation,
			Reason: reason, Message: message,
		})
		return e.c.Status().Patch(e.t.Context(), got, patch)
	})
	if err != nil {
		e.t.Fatalf("set Ready %s on %s: %v", status, member, err)
	}
}

func (e *env) patchCluster(patch string) {
	e.t.Helper()
	cl := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: e.ns}}
	if err := e.c.Patch(e.t.Context(), cl, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		e.t.Fatalf("patch cluster with %s: %v", patch, err)
	}
}

func (e *env) get(name string, obj client.Object) {
	e.t.Helper()
	if err := e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, obj); err != nil {
		e.t.Fatalf("get %T %s: %v", obj, name, err)
	}
}

func (e *env) getCluster() *etcdv1.EtcdCluster {
	e.t.Helper()
	cl := &etcdv1.EtcdCluster{}
	e.get(clusterName, cl)
	return cl
}

func (e *env) getMember(name string) *etcdv1.EtcdMember {
	e.t.Helper()
	m := &etcdv1.EtcdMember{}
	e.get(name, m)
	return m
}

// members lists the cluster's EtcdMembers by name.
func (e *env) members() []etcdv1.EtcdMember {
	e.t.Helper()
	list := &etcdv1.EtcdMemberList{}
	if err := e.c.List(e.t.Context(), list, client.InNamespace(e.ns), client.MatchingLabels{etcdv1.ClusterLabel: clusterName}); err != nil {
		e.t.Fatalf("list EtcdMembers: %v", err)
	}
	slices.SortFunc(list.Items, func(a, b etcdv1.EtcdMember) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// waitMembers waits for n EtcdMembers that pass check.
func (e *env) waitMembers(n int, check func([]etcdv1.EtcdMember) error) []etcdv1.EtcdMember {
	e.t.Helper()
	var ms []etcdv1.EtcdMember
	eventually(e.t, fmt.Sprintf("%d members", n), func() error {
		ms = e.members()
		if len(ms) != n {
			return fmt.Errorf("%d members: %v", len(ms), names(ms))
		}
		return check(ms)
	})
	return ms
}

func (e *env) waitGone(member string) {
	e.t.Helper()
	eventually(e.t, "EtcdMember "+member+" gone", func() error {
		m := &etcdv1.EtcdMember{}
		err := e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: member}, m)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get: %v, finalizers %v", err, m.Finalizers)
	})
}

func (e *env) waitCluster(what string, check func(*etcdv1.EtcdCluster) error) *etcdv1.EtcdCluster {
	e.t.Helper()
	cl := &etcdv1.EtcdCluster{}
	eventually(e.t, what, func() error {
		if err := e.c.Get(e.t.Context(), e.key(), cl); err != nil {
			return err
		}
		if cl.Status.ObservedGeneration != cl.Generation {
			return fmt.Errorf("status is for generation %d, the cluster is at %d", cl.Status.ObservedGeneration, cl.Generation)
		}
		return check(cl)
	})
	return cl
}

// waitConverged waits for an Available cluster whose n members are all
// voters etcd knows and that has nothing left to do.
func (e *env) waitConverged(n int) *etcdv1.EtcdCluster {
	e.t.Helper()
	cl := e.waitCluster(fmt.Sprintf("converged with %d members", n), func(cl *etcdv1.EtcdCluster) error {
		if err := conditions(cl,
			cond{etcdv1.ConditionAvailable, metav1.ConditionTrue, etcdv1.ReasonQuorumHealthy},
			cond{etcdv1.ConditionProgressing, metav1.ConditionFalse, etcdv1.ReasonConverged},
		); err != nil {
			return err
		}
		if len(cl.Status.Members) != n {
			return fmt.Errorf("status.members = %+v", cl.Status.Members)
		}
		return nil
	})
	e.waitMembers(n, func(ms []etcdv1.EtcdMember) error {
		for _, m := range ms {
			if m.Status.MemberID == "" || m.Status.Role != etcdv1.RoleVoter {
				return fmt.Errorf("%s: memberID/role = %q/%q", m.Name, m.Status.MemberID, m.Status.Role)
			}
		}
		return nil
	})
	if got := len(e.fake().Members()); got != n {
		e.t.Errorf("fake etcd has %d members, want %d", got, n)
	}
	return cl
}

// waitPDB waits for the PDB to keep minAvailable members, selected by the
// cluster's labels alone.
func (e *env) waitPDB(minAvailable int) {
	e.t.Helper()
	eventually(e.t, fmt.Sprintf("PDB minAvailable %d", minAvailable), func() error {
		pdb := &policyv1.PodDisruptionBudget{}
		if err := e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: resources.PDBName(clusterName)}, pdb); err != nil {
			return err
		}
		switch {
		case pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != minAvailable:
			return fmt.Errorf("minAvailable = %v", pdb.Spec.MinAvailable)
		case pdb.Spec.Selector == nil || !labels.Equals(pdb.Spec.Selector.MatchLabels, resources.ClusterLabels(clusterName)):
			return fmt.Errorf("selector = %v", pdb.Spec.Selector)
		}
		return nil
	})
}

// waitEvent waits for an event with reason about the named object and
// returns it.
func (e *env) waitEvent(reason, regarding string) eventsv1.Event {
	e.t.Helper()
	var found eventsv1.Event
	eventually(e.t, "event "+reason, func() error {
		evs, err := e.events()
		if err != nil {
			return err
		}
		var seen []string
		for _, ev := range evs {
			if ev.Reason == reason && ev.Regarding.Name == regarding {
				found = ev
				return nil
			}
			seen = append(seen, ev.Reason)
		}
		return fmt.Errorf("events seen: %v", seen)
	})
	return found
}

// events lists the events of the test's namespace.
func (e *env) events() ([]eventsv1.Event, error) {
	list := &eventsv1.EventList{}
	if err := e.c.List(e.t.Context(), list, client.InNamespace(e.ns)); err != nil {
		return nil, err
	}
	return list.Items, nil
}

type cond struct {
	typ    string
	status metav1.ConditionStatus
	reason string
}

// conditions checks conditions of the cluster's current generation.
func conditions(cl *etcdv1.EtcdCluster, want ...cond) error {
	for _, w := range want {
		c := meta.FindStatusCondition(cl.Status.Conditions, w.typ)
		switch {
		case c == nil:
			return fmt.Errorf("no %s condition", w.typ)
		case c.Status != w.status || c.Reason != w.reason:
			return fmt.Errorf("%s = %s %s (%s), want %s %s", w.typ, c.Status, c.Reason, c.Message, w.status, w.reason)
		case c.ObservedGeneration != cl.Generation:
			return fmt.Errorf("%s is for generation %d, the cluster is at %d", w.typ, c.ObservedGeneration, cl.Generation)
		}
	}
	return nil
}

// initialUnregistered checks an initial member before etcd answers: it may
// start without a Registered condition, which it gets with its member ID.
func initialUnregistered(m *etcdv1.EtcdMember) error {
	switch c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionRegistered); {
	case m.Spec.InitialClusterState != etcdv1.InitialClusterStateNew:
		return fmt.Errorf("%s: initialClusterState %s, want new", m.Name, m.Spec.InitialClusterState)
	case c != nil:
		return fmt.Errorf("%s: Registered = %s %s before etcd answers, want none", m.Name, c.Status, c.Reason)
	}
	return nil
}

// registered checks Registered True with reason for the member's generation.
func registered(m *etcdv1.EtcdMember, reason string) error {
	c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionRegistered)
	switch {
	case c == nil:
		return fmt.Errorf("%s: no Registered condition", m.Name)
	case c.Status != metav1.ConditionTrue || c.Reason != reason:
		return fmt.Errorf("%s: Registered = %s %s (%s), want True %s", m.Name, c.Status, c.Reason, c.Message, reason)
	case c.ObservedGeneration != m.Generation:
		return fmt.Errorf("%s: Registered is for generation %d, the member is at %d", m.Name, c.ObservedGeneration, m.Generation)
	}
	return nil
}

// waitUpdating waits for the rollout to give version to one member not in
// done, the only member with an update in flight, and returns it. Two such
// members at once fail the test at once: a rollout restarts one at a time.
func (e *env) waitUpdating(version string, done []string) etcdv1.EtcdMember {
	e.t.Helper()
	var got etcdv1.EtcdMember
	eventually(e.t, fmt.Sprintf("a member updated to %s after %v", version, done), func() error {
		ms := e.members()
		var updating, stamped []string
		for _, m := range withVersion(ms, version) {
			if !slices.Contains(done, m.Name) {
				updating = append(updating, m.Name)
				got = m
			}
		}
		for _, m := range ms {
			if _, ok := m.Annotations[etcdv1.UpdateStartedAnnotation]; ok {
				stamped = append(stamped, m.Name)
			}
		}
		switch {
		case len(updating) > 1:
			e.t.Fatalf("members %v updated to %s at once, after %v", updating, version, done)
		case len(updating) == 0:
			return fmt.Errorf("no member updated yet; members with an update in flight: %v", stamped)
		case !slices.Equal(stamped, updating):
			return fmt.Errorf("members with an update in flight: %v, want %v", stamped, updating)
		}
		return nil
	})
	return got
}

// waitRolling waits for the cluster to say it is updating member, the nth
// of the 3, while it stays available.
func (e *env) waitRolling(member string, n int) {
	e.t.Helper()
	e.waitCluster(fmt.Sprintf("rolling update at %s (%d of 3)", member, n), func(cl *etcdv1.EtcdCluster) error {
		if err := conditions(cl,
			cond{etcdv1.ConditionProgressing, metav1.ConditionTrue, etcdv1.ReasonRollingUpdate},
			cond{etcdv1.ConditionAvailable, metav1.ConditionTrue, etcdv1.ReasonQuorumHealthy},
		); err != nil {
			return err
		}
		if msg := meta.FindStatusCondition(cl.Status.Conditions, etcdv1.ConditionProgressing).Message; !strings.Contains(msg, fmt.Sprintf("(%d of 3)", n)) {
			return fmt.Errorf("Progressing message %q, want (%d of 3)", msg, n)
		}
		if ro := cl.Status.Rollout; ro == nil || ro.Member != member || ro.Updated != int32(n) || ro.Total != 3 {
			return fmt.Errorf("status.rollout = %+v, want member %s, %d of 3 updated", ro, member, n)
		}
		return nil
	})
}

// withVersion are the members whose spec asks for version.
func withVersion(ms []etcdv1.EtcdMember, version string) []etcdv1.EtcdMember {
	var out []etcdv1.EtcdMember
	for _, m := range ms {
		if m.Spec.Version == version {
			out = append(out, m)
		}
	}
	return out
}

func fakeMember(fake *etcd.Fake, peerURL string) (etcd.Member, bool) {
	for _, em := range fake.Members() {
		if slices.Contains(em.PeerURLs, peerURL) {
			return em, true
		}
	}
	return etcd.Member{}, false
}

func fakeLeaderName(fake *etcd.Fake) string {
	for _, em := range fake.Members() {
		if em.ID == fake.Leader() {
			return em.Name
		}
	}
	return ""
}

func hasPorts(svc *corev1.Service, ports ...int32) bool {
	for _, p := range ports {
		if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Port == p }) {
			return false
		}
	}
	return true
}

func names(ms []etcdv1.EtcdMember) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func countFunc[T any](s []T, f func(T) bool) int {
	n := 0
	for _, x := range s {
		if f(x) {
			n++
		}
	}
	return n
}
