package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// hangingClient is an etcd that answers its member list only once hang is
// closed (or its caller gives up), as a paused or cut-off cluster does.
type hangingClient struct {
	etcd.Client
	hang  chan struct{}
	lists atomic.Int32
}

func newHanging(c etcd.Client) *hangingClient {
	return &hangingClient{Client: c, hang: make(chan struct{})}
}

func (h *hangingClient) MemberList(ctx context.Context) (uint64, []etcd.Member, error) {
	h.lists.Add(1)
	select {
	case <-h.hang:
		return h.Client.MemberList(ctx)
	case <-ctx.Done():
		return 0, nil, errors.Join(etcd.ErrUnreachable, ctx.Err())
	}
}

func (h *hangingClient) release() { close(h.hang) }

// answering is an etcd of one member that answers at once.
func answering() *etcd.Fake {
	f := etcd.NewFake()
	f.Bootstrap([3]string{"m0", "http://m0:2380", "http://m0:2379"})
	return f
}

func testCluster(name string) *etcdv1.EtcdCluster {
	return &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

func lookAt(c etcd.Client) lookRequest {
	return lookRequest{client: c, listTimeout: time.Hour, statusTimeout: time.Hour, etcdTimeout: time.Hour}
}

// returnsSoon runs f and fails the test if it has not returned within a
// bound far above anything it may wait for: a pass held by a hung etcd
// would hold it for the hour of the look's timeouts.
func returnsSoon[T any](t *testing.T, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("still waiting on etcd after 30 s")
		var zero T
		return zero
	}
}

// observeSoon is o.observe, bounded by returnsSoon.
func observeSoon(t *testing.T, o *Observer, c *etcdv1.EtcdCluster, req lookRequest) (observation, bool) {
	t.Helper()
	type result struct {
		obs observation
		ok  bool
	}
	r := returnsSoon(t, func() result {
		obs, ok := o.observe(context.Background(), c, req)
		return result{obs, ok}
	})
	return r.obs, r.ok
}

// noWake fails the test if a wake-up is pending: a look whose answer the
// pass waiting for it took wakes nobody, or every pass would bring another
// that looks again.
func noWake(t *testing.T, o *Observer) {
	t.Helper()
	select {
	case ev := <-o.wake:
		t.Fatalf("%s woken after its pass took the answer", ev.Object.Name)
	default:
	}
}

// woken waits for the observer's wake-up of the named cluster.
func woken(t *testing.T, o *Observer, name string) {
	t.Helper()
	select {
	case ev := <-o.wake:
		if ev.Object.Name != name {
			t.Fatalf("woke %s, want %s", ev.Object.Name, name)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s was not woken", name)
	}
}

func TestObserverNeverHoldsAPassOnAHungCluster(t *testing.T) {
	t.Parallel()
	o := &Observer{Limit: 2, Wait: 20 * time.Millisecond}
	o.init()
	c := testCluster("hung")
	h := newHanging(answering())
	req := lookAt(h)
	if obs, ok := observeSoon(t, o, c, req); ok {
		t.Fatalf("a hung etcd answered: %+v", obs)
	}
	// A pass while the look runs starts no second one.
	if _, ok := observeSoon(t, o, c, req); ok {
		t.Fatal("a second pass got an answer while the look hangs")
	}
	if n := h.lists.Load(); n != 1 {
		t.Fatalf("member lists asked: %d, want 1 (one look at a time)", n)
	}
	h.release()
	woken(t, o, "hung")
	obs, ok := observeSoon(t, o, c, req)
	if !ok || obs.listErr != nil || len(obs.list) != 1 {
		t.Fatalf("the answer after the release: ok %v, %+v", ok, obs)
	}
	// Taken once: the next pass looks again.
	observeSoon(t, o, c, req)
	if n := h.lists.Load(); n != 2 {
		t.Fatalf("member lists after the answer was taken: %d, want 2 (a new look)", n)
	}
}

func TestObserverDoesNotWaitForASuspectCluster(t *testing.T) {
	t.Parallel()
	o := &Observer{Limit: 2, Wait: time.Hour}
	o.init()
	c := testCluster("gone")
	f := answering()
	f.FailNext("MemberList", etcd.ErrUnreachable)
	req := lookAt(f)
	// The first look is waited for (the cluster is not known to be
	// suspect) and finds no answer.
	obs, ok := observeSoon(t, o, c, req)
	if !ok || !errors.Is(obs.listErr, etcd.ErrUnreachable) {
		t.Fatalf("first look: ok %v, %+v, want the member list refused", ok, obs)
	}
	noWake(t, o)
	// Now suspect: a pass does not wait an hour for its look, even one
	// that answers; it takes the answer on the wake-up.
	if _, ok := observeSoon(t, o, c, req); ok {
		t.Fatal("a suspect cluster's pass waited for its look")
	}
	woken(t, o, "gone")
	obs, ok = observeSoon(t, o, c, req)
	if !ok || obs.listErr != nil {
		t.Fatalf("the suspect cluster's answer: ok %v, %+v", ok, obs)
	}
	// Answered again: no longer suspect, its next look is waited for.
	if _, ok := observeSoon(t, o, c, req); !ok {
		t.Fatal("a cluster that answered again was not waited for")
	}
	noWake(t, o)
}

func TestObserverDemotesAClusterThatStopsAnswering(t *testing.T) {
	t.Parallel()
	// One slot in the answering lane. The hung cluster takes it; past the
	// wait it must give it up, or every other cluster's look would wait
	// for the hung one's timeouts (an hour here).
	o := &Observer{Limit: 1, Wait: 20 * time.Millisecond}
	o.init()
	h := newHanging(answering())
	defer h.release()
	if _, ok := observeSoon(t, o, testCluster("hung"), lookAt(h)); ok {
		t.Fatal("a hung etcd answered")
	}
	// A healthy cluster's look runs while the hung one goes on: its answer
	// comes in its pass or on its wake-up.
	healthy := testCluster("healthy")
	req := lookAt(answering())
	obs, ok := observeSoon(t, o, healthy, req)
	if !ok {
		woken(t, o, "healthy")
		obs, ok = observeSoon(t, o, healthy, req)
	}
	if !ok || obs.listErr != nil || len(obs.list) != 1 {
		t.Fatalf("the healthy cluster: ok %v, %+v", ok, obs)
	}
	if n := h.lists.Load(); n != 1 {
		t.Fatalf("member lists of the hung cluster: %d, want 1", n)
	}
}

func TestObserverDropsAnOldAnswer(t *testing.T) {
	t.Parallel()
	o := &Observer{Limit: 1, Wait: time.Hour}
	o.init()
	key := types.NamespacedName{Namespace: "ns", Name: "old"}
	stale := &look{done: make(chan struct{}), ended: time.Now().Add(-answerTTL - time.Second), answer: observation{clusterID: 1}}
	close(stale.done)
	o.looks[key] = stale
	f := answering()
	obs, ok := observeSoon(t, o, testCluster("old"), lookAt(f))
	if !ok || f.Calls("MemberList") != 1 || obs.clusterID == 1 {
		t.Fatalf("ok %v, member lists %d, cluster ID %d: want a new look, not the old answer", ok, f.Calls("MemberList"), obs.clusterID)
	}
}

// TestHungClusterPassDecidesNothing: with the observer on, a pass of a
// cluster whose etcd hangs returns within the observer's wait instead of
// the etcd timeout, leaves the conditions as they were, and the pass after
// the answer's wake-up goes on as before.
func TestHungClusterPassDecidesNothing(t *testing.T) {
	e := newEnv(t, 3, interceptor.Funcs{})
	e.formed()
	e.converge(20)
	before := condition(e.cluster().Status.Conditions, etcdv1.ConditionAvailable)
	if before.Status != metav1.ConditionTrue {
		t.Fatalf("Available before the hang: %+v", before)
	}
	e.r.Options.EtcdTimeout = time.Hour
	e.r.Observer = &Observer{Limit: 1, Wait: 20 * time.Millisecond}
	e.r.Observer.init()
	var once sync.Once
	h := newHanging(e.fake())
	e.r.Etcd = hangingFactory{FakeFactory: e.etcd, client: h}
	defer once.Do(h.release)

	res := returnsSoon(t, func() ctrl.Result { return e.mustReconcile() })
	if res.RequeueAfter != e.r.observeWaitRetry() {
		t.Fatalf("requeue after %v, want %v (waiting for the look)", res.RequeueAfter, e.r.observeWaitRetry())
	}
	if now := condition(e.cluster().Status.Conditions, etcdv1.ConditionAvailable); now != before {
		t.Fatalf("Available changed by a pass without etcd's answer: %+v, was %+v", now, before)
	}
	// The operator scales while the look hangs: nothing is added yet.
	e.setReplicas(4)
	returnsSoon(t, func() ctrl.Result { return e.mustReconcile() })
	if n := len(e.fake().Members()); n != 3 {
		t.Fatalf("etcd has %d members while its answer is awaited, want 3", n)
	}
	once.Do(h.release)
	woken(t, e.r.Observer, e.key.Name)
	// Passes whose look outlasts the short wait on a busy machine come
	// back for the answer: converge allows for them.
	e.converge(60)
	if n := len(e.fake().Members()); n != 4 {
		t.Fatalf("etcd has %d members after the answer, want 4", n)
	}
}

// hangingFactory hands out one client for every cluster.
type hangingFactory struct {
	*etcd.FakeFactory
	client etcd.Client
}

func (f hangingFactory) Get(context.Context, string, []string, etcd.Credentials) (etcd.Client, error) {
	return f.client, nil
}

func TestLookAsksForAlarmsOnlyWhenAMemberReportsAnError(t *testing.T) {
	t.Parallel()
	f := etcd.NewFake()
	f.Bootstrap([3]string{"m0", "http://m0:2380", "http://m0:2379"}, [3]string{"m1", "http://m1:2380", "http://m1:2379"},
		[3]string{"m2", "http://m2:2380", "http://m2:2379"})
	req := lookAt(f)
	if o := req.run(context.Background()); o.alarmsErr != nil || len(o.alarms) != 0 || f.Calls("Alarms") != 0 {
		t.Fatalf("quiet cluster: alarms %v (%v), alarm lists asked %d, want none asked", o.alarms, o.alarmsErr, f.Calls("Alarms"))
	}
	// A member that does not answer may hold an alarm the others would
	// not know yet: the list is asked.
	f.SetHealthy("m1", false)
	if o := req.run(context.Background()); o.listErr != nil || f.Calls("Alarms") != 1 {
		t.Fatalf("a member without status: list error %v, alarm lists asked %d, want 1", o.listErr, f.Calls("Alarms"))
	}
	f.SetHealthy("m1", true)
	f.RaiseAlarm("m1", etcd.AlarmNoSpace)
	o := req.run(context.Background())
	if f.Calls("Alarms") != 2 || len(o.alarms) != 1 || o.alarms[0].Type != etcd.AlarmNoSpace {
		t.Fatalf("raised alarm: %v, alarm lists asked %d, want the NOSPACE alarm from a second list", o.alarms, f.Calls("Alarms"))
	}
}

func TestLightLookAsksOneMemberAndCarriesTheOthers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		// url is the asked member's client URL as the pass knows it:
		// none (the list gives it), the one etcd lists (its status is
		// asked first, before the list, and not again), or another one
		// (asked first, then asked again at the URL etcd lists).
		url string
		// statuses asked per light look
		statuses int
	}{
		{name: "URL from the list", url: "", statuses: 1},
		{name: "status asked before the list", url: "listed", statuses: 1},
		{name: "stale URL asked again at the listed one", url: "http://elsewhere:2379", statuses: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := etcd.NewFake()
			f.Bootstrap([3]string{"m0", "http://m0:2380", "http://m0:2379"}, [3]string{"m1", "http://m1:2380", "http://m1:2379"},
				[3]string{"m2", "http://m2:2380", "http://m2:2379"})
			full := lookAt(f).run(context.Background())
			if len(full.health) != 3 || f.Calls("Status") != 3 {
				t.Fatalf("full look: %d statuses, %d asked, want 3 and 3", len(full.health), f.Calls("Status"))
			}
			var ask uint64
			carried := map[uint64]etcd.Status{}
			for id, st := range full.health {
				if ask == 0 {
					ask = id
					continue
				}
				st.DBSize = 12345 // marks the carried copy
				carried[id] = st
			}
			req := lookAt(f)
			req.only, req.carried, req.onlyURL = ask, carried, tt.url
			if tt.url == "listed" {
				req.onlyURL = "http://" + listedName(full.list, ask) + ":2379"
			}

			o := req.run(context.Background())
			if got := f.Calls("Status"); got != 3+tt.statuses {
				t.Fatalf("light look asked %d statuses in all, want %d", got, 3+tt.statuses)
			}
			if f.Calls("Alarms") != 0 {
				t.Fatalf("light look of a quiet cluster asked for the alarm list")
			}
			if len(o.health) != 3 || len(o.carried) != 2 || o.carried[ask] || o.health[ask].DBSize == 12345 {
				t.Fatalf("light look: health %v, carried %v; want the asked member's own answer and the two others carried", o.health, o.carried)
			}
			if o.leader == 0 {
				t.Fatalf("light look: no leader from the asked member's answer")
			}

			// The asked member holds an alarm: its status says so, and the list is asked.
			f.RaiseAlarm(listedName(full.list, ask), etcd.AlarmNoSpace)
			if o := req.run(context.Background()); len(o.alarms) != 1 || f.Calls("Alarms") != 1 {
				t.Fatalf("light look with an alarm: %v, %d lists asked, want the NOSPACE alarm from one list", o.alarms, f.Calls("Alarms"))
			}

			// The asked member does not answer: nothing is carried, so the pass
			// sees members without health and the next look asks every one.
			f.SetHealthy(listedName(full.list, ask), false)
			if o := req.run(context.Background()); len(o.health) != 0 || len(o.carried) != 0 {
				t.Fatalf("asked member silent: health %v carried %v, want neither", o.health, o.carried)
			}

			// A member etcd no longer lists is not carried.
			f.SetHealthy(listedName(full.list, ask), true)
			carried[999] = etcd.Status{MemberID: 999}
			if o := req.run(context.Background()); o.carried[999] || len(o.health) != 3 {
				t.Fatalf("unlisted member carried: %v", o.health)
			}
		})
	}
}

func listedName(list []etcd.Member, id uint64) string {
	for _, em := range list {
		if em.ID == id {
			return em.Name
		}
	}
	return ""
}

// TestObserverDoesNotWaitWhenNoMemberIsReady: the pass of a cluster none
// of whose members is Ready (its node lost, its etcd hung) does not wait
// for its look, which would hold a worker for the wait; the look's end
// wakes the cluster, and the next pass takes the answer.
func TestObserverDoesNotWaitWhenNoMemberIsReady(t *testing.T) {
	t.Parallel()
	o := &Observer{Limit: 2, Wait: time.Hour}
	o.init()
	h := newHanging(answering())
	c := testCluster("unready")
	req := lookAt(h)
	req.noneReady = true
	if _, ok := observeSoon(t, o, c, req); ok {
		t.Fatal("a hung etcd answered")
	}
	h.release()
	woken(t, o, "unready")
	if obs, ok := observeSoon(t, o, c, req); !ok || obs.listErr != nil {
		t.Fatalf("the answer on the wake-up: ok %v, %+v", ok, obs)
	}
}

func TestObserverStopsWaitingWhileManyLooksAreOverdue(t *testing.T) {
	t.Parallel()
	// Two hung clusters fill a lane of two with overdue looks: a mass
	// hang. A pass of a healthy cluster then does not wait for its look
	// (each newly hung cluster would hold a worker for the wait); the
	// look's end wakes it, and the next pass takes the answer. Once the
	// hung looks end, passes wait again.
	o := &Observer{Limit: 2, Wait: 20 * time.Millisecond}
	o.init()
	hung := []*hangingClient{newHanging(answering()), newHanging(answering())}
	for i, h := range hung {
		if _, ok := observeSoon(t, o, testCluster(fmt.Sprintf("hung-%d", i)), lookAt(h)); ok {
			t.Fatal("a hung etcd answered")
		}
	}
	waitOverdue := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			o.mu.Lock()
			n := o.overdue
			o.mu.Unlock()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d looks overdue, want %d", n, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitOverdue(2)
	healthy := testCluster("healthy")
	req := lookAt(answering())
	if _, ok := observeSoon(t, o, healthy, req); ok {
		t.Fatal("a pass waited for its look while the lane's worth of looks were overdue")
	}
	woken(t, o, "healthy")
	if obs, ok := observeSoon(t, o, healthy, req); !ok || obs.listErr != nil {
		t.Fatalf("the healthy cluster's answer on its wake-up: ok %v, %+v", ok, obs)
	}
	for _, h := range hung {
		h.release()
	}
	for range hung {
		select {
		case ev := <-o.wake:
			if !strings.HasPrefix(ev.Object.Name, "hung-") {
				t.Fatalf("woke %s, want a hung cluster", ev.Object.Name)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a released look did not wake its cluster")
		}
	}
	waitOverdue(0)
	if _, ok := observeSoon(t, o, healthy, req); !ok {
		t.Fatal("once no look was overdue, a healthy cluster's pass did not wait for its look")
	}
}
