package user

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/pki"
)

// setStatus turns the facts of a reconcile into the status fields and the
// Ready condition.
func setStatus(s *scope) {
	setSecretStatus(s)
	setReady(s)
}

// setSecretStatus names the Secret and its certificate's dates; a pass
// that did not get to the Secret keeps what the last one wrote.
func setSecretStatus(s *scope) {
	u := s.user
	if s.secret == nil || s.cert == nil {
		return
	}
	u.Status.SecretName = s.secret.Name
	u.Status.NotAfter = ptrTime(s.cert.Cert.NotAfter)
	u.Status.RenewAt = ptrTime(pki.RenewAt(s.cert.Cert, s.cluster.Spec.TLS.RenewBeforeExpiry()))
}

func setReady(s *scope) {
	u := s.user
	switch {
	case s.reason != "":
		kube.Set(&u.Status.Conditions, u.Generation, etcdv1.ConditionReady, false, s.reason, s.msg)
	case !s.applied:
		kube.Set(&u.Status.Conditions, u.Generation, etcdv1.ConditionReady, false, etcdv1.ReasonWaitingForCluster,
			"The user is not in etcd yet; it is on its way")
	default:
		prefixes := make([]string, 0, len(u.Spec.Permissions))
		for _, p := range u.Spec.Permissions {
			prefixes = append(prefixes, fmt.Sprintf("%q (%s)", p.Prefix, access(p.Access)))
		}
		kube.Set(&u.Status.Conditions, u.Generation, etcdv1.ConditionReady, true, etcdv1.ReasonRolesApplied,
			fmt.Sprintf("User %s has role %s on %s; credentials in Secret %s", u.Status.UserName, u.Status.RoleName, strings.Join(prefixes, ", "), u.Status.SecretName))
	}
}

func access(a etcdv1.KeyAccess) etcdv1.KeyAccess {
	if a == "" {
		return etcdv1.KeyAccessRead
	}
	return a
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &mt
}
