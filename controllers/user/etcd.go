package user

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// clientKey is this controller's etcd client of a cluster, shared by the
// cluster's users and apart from the other controllers'.
func clientKey(cluster types.NamespacedName) string { return "user/" + cluster.String() }

// etcdClient connects to the cluster's client Service as the operator (its
// root certificate).
func (r *Reconciler) etcdClient(ctx context.Context, cl *etcdv1.EtcdCluster, creds etcd.Credentials) (etcd.Client, error) {
	return r.Etcd.Get(ctx, clientKey(types.NamespacedName{Namespace: cl.Namespace, Name: cl.Name}),
		[]string{fmt.Sprintf("https://%s.%s.svc.%s:%d", resources.ClientServiceName(cl.Name), cl.Namespace, r.Options.ClusterDomain, etcdv1.ClientPort)},
		creds)
}

// ensureEtcdUser makes etcd hold the user and its role as the spec says.
// EnsureUser may run again safely; it reads the user and role and changes
// only what differs, so a pass over a user as it should be writes nothing
// to etcd.
func (r *Reconciler) ensureEtcdUser(ctx context.Context, s *scope) (ctrl.Result, error) {
	u := s.user
	if s.reason != "" || s.secret == nil {
		return ctrl.Result{}, nil
	}
	cli, err := r.etcdClient(ctx, s.cluster, s.root)
	if err != nil {
		return ctrl.Result{}, err
	}
	want := etcd.User{Name: u.Status.UserName, Role: u.Status.RoleName, Permissions: permissions(u.Spec)}
	if u.Spec.Password {
		want.Password = string(s.secret.Data[PasswordKey])
		want.SetPassword = u.Status.AppliedSecretVersion != s.secret.ResourceVersion
	}
	tctx, cancel := context.WithTimeout(ctx, r.Options.EtcdTimeout)
	defer cancel()
	ready := kube.Find(u.Status.Conditions, etcdv1.ConditionReady, u.Generation)
	if ready == nil || ready.Reason != etcdv1.ReasonRolesApplied {
		ctrl.LoggerFrom(ctx).Info("Applying the user and its role in etcd", "user", want.Name, "role", want.Role, "prefixes", len(want.Permissions))
	}
	if err := cli.EnsureUser(tctx, want); err != nil {
		s.wait(etcdv1.ReasonEtcdError, "etcd refused the user or its role: %v", err)
		return ctrl.Result{}, fmt.Errorf("apply user %s: %w", want.Name, err)
	}
	if ready == nil || ready.Reason != etcdv1.ReasonRolesApplied {
		r.Recorder.Eventf(u, nil, corev1.EventTypeNormal, "RolesApplied", "EnsureUser",
			"User %s has role %s with %d key prefixes in etcd", want.Name, want.Role, len(want.Permissions))
	}
	if u.Spec.Password {
		u.Status.AppliedSecretVersion = s.secret.ResourceVersion
	}
	s.applied = true
	return ctrl.Result{}, nil
}

// permissions are the spec's prefixes as etcd ranges.
func permissions(spec etcdv1.EtcdUserSpec) []etcd.Permission {
	out := make([]etcd.Permission, 0, len(spec.Permissions))
	for _, p := range spec.Permissions {
		a := etcd.AccessRead
		if p.Access == etcdv1.KeyAccessReadWrite {
			a = etcd.AccessReadWrite
		}
		out = append(out, etcd.PrefixPermission(p.Prefix, a))
	}
	return out
}
