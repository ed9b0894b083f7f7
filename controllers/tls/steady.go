package tls

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/pki"
)

// An idle pass reads no Secret from the API server.
//
// The cache holds Secrets' metadata only, so a pass reads the data of the
// cluster's Secrets it needs from the API server (ownSecret). Passes come
// on events, not on a timer, but some events change nothing here (a
// member's status, a restart): each would still cost a read of every
// Secret of the cluster. So the controller remembers, for each cluster,
// the last pass that found everything as it should be: nothing written,
// nothing wrong, no rotation under way, no certificate or password of the
// user's or cert-manager's (those are read past the cache at every pass,
// by design). What that pass decided follows from the cluster object, the
// cluster's own Secrets and the clock alone, so a pass that finds the
// cluster at the same resourceVersion, each of those Secrets at the
// resourceVersion the cache showed then, and the clock before the first
// renewal, CA rotation or expiry that pass foresaw, would decide the same
// again: it returns at once, having read nothing from the API server.
// Nothing of the Secrets' data is kept, only versions and times.
type steadyPasses struct {
	mu   sync.Mutex
	last map[types.NamespacedName]steadyPass
}

// steadyPass is what a steady pass over a cluster saw.
type steadyPass struct {
	// cluster is the cluster's resourceVersion.
	cluster string
	// secrets: the Secrets read, each with the resourceVersion the cache
	// showed ("" for none).
	secrets []seenSecret
	// until is when its decisions may change (zero: never by time alone),
	// renewAt when it asked to come back.
	until, renewAt time.Time
}

type seenSecret struct{ name, rv string }

// steady says whether the pass found everything as it should be, from
// the cluster and its own Secrets alone.
func (s *scope) steady() bool {
	return s.done && !s.acted && len(s.issued) == 0 && s.tlsReason == "" && s.authReason == "" &&
		!s.pollUser && !s.external && s.nextCA == nil && s.pendingSource == ""
}

// until is the first moment the pass's decisions may change with the
// clock alone: a certificate due for renewal, the CA due for rotation, the
// retired CA expiring (it leaves the trust bundle).
func (s *scope) until() time.Time {
	var at time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	earliest(s.renewAt)
	if s.ca != nil {
		earliest(pki.RenewAt(s.ca.Cert, 0))
	}
	if prev, err := pki.ParseCertsPEM(s.previousCA); err == nil && prev[0].NotAfter.After(s.now) {
		earliest(prev[0].NotAfter)
	}
	return at
}

// record remembers the pass if it was steady, and forgets the cluster's
// last steady pass otherwise.
func (p *steadyPasses) record(s *scope, steady bool) {
	key := types.NamespacedName{Namespace: s.cluster.Namespace, Name: s.cluster.Name}
	if !steady {
		p.forget(key)
		return
	}
	pass := steadyPass{cluster: s.cluster.ResourceVersion, until: s.until(), renewAt: s.renewAt}
	for name, rv := range s.seen {
		pass.secrets = append(pass.secrets, seenSecret{name, rv})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[types.NamespacedName]steadyPass{}
	}
	p.last[key] = pass
}

func (p *steadyPasses) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// again says whether a pass over c now would repeat the last steady one,
// reading the Secrets' versions from the cache (cached), and with what
// result: the same as renewLater's.
func (p *steadyPasses) again(ctx context.Context, cached client.Reader, c *etcdv1.EtcdCluster, now time.Time) (ctrl.Result, bool) {
	p.mu.Lock()
	pass, ok := p.last[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}]
	p.mu.Unlock()
	if !ok || pass.cluster != c.ResourceVersion || !pass.until.IsZero() && !now.Before(pass.until) {
		return ctrl.Result{}, false
	}
	for _, seen := range pass.secrets {
		m, err := kube.SecretMeta(ctx, cached, client.ObjectKey{Namespace: c.Namespace, Name: seen.name})
		if err != nil {
			return ctrl.Result{}, false
		}
		have := ""
		if m != nil {
			have = m.ResourceVersion
		}
		if have != seen.rv {
			return ctrl.Result{}, false
		}
	}
	if pass.renewAt.IsZero() {
		return ctrl.Result{}, true
	}
	return ctrl.Result{RequeueAfter: max(pass.renewAt.Sub(now), time.Second)}, true
}
