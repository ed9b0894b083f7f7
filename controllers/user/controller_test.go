package user_test

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/controllers/user"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

func TestEnvUserController(t *testing.T) {
	c, factory := startSuite(t)
	e := func(t *testing.T) *env {
		return &env{t: t, c: c, factory: factory, ns: testenv.NewNamespace(t, c, "user-", nil)}
	}
	t.Run("CreateChangeDelete", func(t *testing.T) { t.Parallel(); testCreateChangeDelete(t, e(t)) })
	t.Run("AuthDisabled", func(t *testing.T) { t.Parallel(); testAuthDisabled(t, e(t)) })
	t.Run("WaitingForCluster", func(t *testing.T) { t.Parallel(); testWaitingForCluster(t, e(t)) })
	t.Run("NameConflict", func(t *testing.T) { t.Parallel(); testNameConflict(t, e(t)) })
}

type env struct {
	t       *testing.T
	c       client.Client
	factory *etcd.FakeFactory
	ns      string
}

const clusterName = "demo"

// fake is the etcd the user controller talks to.
func (e *env) fake() *etcd.Fake { return e.factory.Cluster("user/" + e.ns + "/" + clusterName) }

func (e *env) createCluster(auth bool) {
	e.t.Helper()
	cl := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: e.ns}, Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16"}}
	cl.Spec.Auth.Enabled = auth
	if err := e.c.Create(e.t.Context(), cl); err != nil {
		e.t.Fatalf("create EtcdCluster: %v", err)
	}
}

// setAvailable plays the cluster controller: authentication waits for it.
func (e *env) setAvailable() {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cl := &etcdv1.EtcdCluster{}
		if err := e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: clusterName}, cl); err != nil {
			return err
		}
		meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonQuorumHealthy, ObservedGeneration: cl.Generation})
		return e.c.Status().Update(e.t.Context(), cl)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) createUser(name string, password bool, perms ...etcdv1.KeyPermission) {
	e.t.Helper()
	u := &etcdv1.EtcdUser{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: etcdv1.EtcdUserSpec{ClusterName: clusterName, Permissions: perms, Password: password}}
	if err := e.c.Create(e.t.Context(), u); err != nil {
		e.t.Fatalf("create EtcdUser: %v", err)
	}
}

func (e *env) user(name string) (*etcdv1.EtcdUser, error) {
	u := &etcdv1.EtcdUser{}
	return u, e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, u)
}

func (e *env) secret(name string) *corev1.Secret {
	e.t.Helper()
	s := &corev1.Secret{}
	if err := e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// waitReady waits for the user's Ready of its current generation.
func (e *env) waitReady(name string, status metav1.ConditionStatus, reason string) *etcdv1.EtcdUser {
	e.t.Helper()
	var u *etcdv1.EtcdUser
	eventually(e.t, fmt.Sprintf("Ready %s %s", status, reason), func() error {
		var err error
		if u, err = e.user(name); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(u.Status.Conditions, etcdv1.ConditionReady)
		if cond == nil || cond.Status != status || cond.Reason != reason || cond.ObservedGeneration != u.Generation {
			return fmt.Errorf("Ready = %+v", cond)
		}
		return nil
	})
	return u
}

func rw(prefix string) etcdv1.KeyPermission {
	return etcdv1.KeyPermission{Prefix: prefix, Access: etcdv1.KeyAccessReadWrite}
}

func read(prefix string) etcdv1.KeyPermission {
	return etcdv1.KeyPermission{Prefix: prefix, Access: etcdv1.KeyAccessRead}
}

// testCreateChangeDelete: a user of a cluster with authentication on gets
// its certificate, password and role; a prefix change changes the role in
// place; deleting the EtcdUser deletes the user and role from etcd.
func testCreateChangeDelete(t *testing.T, e *env) {
	e.createCluster(true)
	e.setAvailable()
	e.createUser("tenant-a", true, rw("/a/"), read("/shared/"))
	u := e.waitReady("tenant-a", metav1.ConditionTrue, etcdv1.ReasonRolesApplied)
	checkSecret(t, e, u)
	role := resources.UserRoleName("tenant-a")
	if u.Status.UserName != "tenant-a" || u.Status.RoleName != role || u.Status.NotAfter == nil {
		t.Errorf("status = %+v", u.Status)
	}
	sec := e.secret(u.Status.SecretName)
	have, ok := e.fake().User("tenant-a")
	if !ok || have.Password != string(sec.Data[user.PasswordKey]) || !slices.Equal(have.Roles, []string{role}) {
		t.Errorf("etcd user = %+v, %t", have, ok)
	}
	checkRole(t, e, role, etcd.PrefixPermission("/a/", etcd.AccessReadWrite), etcd.PrefixPermission("/shared/", etcd.AccessRead))

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := e.user("tenant-a")
		if err != nil {
			return err
		}
		u.Spec.Permissions = []etcdv1.KeyPermission{read("/b/")}
		return e.c.Update(t.Context(), u)
	})
	if err != nil {
		t.Fatal(err)
	}
	e.waitReady("tenant-a", metav1.ConditionTrue, etcdv1.ReasonRolesApplied)
	checkRole(t, e, role, etcd.PrefixPermission("/b/", etcd.AccessRead))

	if err := e.c.Delete(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the EtcdUser gone", func() error {
		if _, err := e.user("tenant-a"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get: %v", err)
		}
		return nil
	})
	if _, ok := e.fake().User("tenant-a"); ok {
		t.Error("the user is still in etcd")
	}
	if _, ok := e.fake().Role(role); ok {
		t.Error("the role is still in etcd")
	}
}

// checkSecret: the certificate is the user's, for clients, from the
// cluster's CA; ca.crt checks the members; the Secret goes with the user.
func checkSecret(t *testing.T, e *env, u *etcdv1.EtcdUser) {
	t.Helper()
	if u.Status.SecretName != resources.UserSecretName(clusterName, u.Name) {
		t.Fatalf("status.secretName = %q", u.Status.SecretName)
	}
	sec := e.secret(u.Status.SecretName)
	kp, err := pki.ParseKeyPair(sec.Data[pki.CertKey], sec.Data[pki.KeyKey])
	if err != nil {
		t.Fatal(err)
	}
	ca := e.secret(resources.CASecretName(clusterName))
	caKP, err := pki.ParseKeyPair(ca.Data[pki.CertKey], ca.Data[pki.KeyKey])
	if err != nil {
		t.Fatal(err)
	}
	if err := kp.Cert.CheckSignatureFrom(caKP.Cert); err != nil || kp.Cert.Subject.CommonName != u.Name ||
		!slices.Equal(kp.Cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("certificate: CN %q, usages %v, signature %v", kp.Cert.Subject.CommonName, kp.Cert.ExtKeyUsage, err)
	}
	root := e.secret(resources.ClientTLSSecretName(clusterName))
	if string(sec.Data[pki.CAKey]) != string(root.Data[pki.CAKey]) || len(sec.Data[user.PasswordKey]) == 0 {
		t.Errorf("ca.crt is not the client Secret's, or no password")
	}
	if owner := metav1.GetControllerOf(sec); owner == nil || owner.UID != u.UID {
		t.Errorf("the Secret's controller is %+v, not the EtcdUser", owner)
	}
}

func checkRole(t *testing.T, e *env, role string, want ...etcd.Permission) {
	t.Helper()
	slices.SortFunc(want, func(a, b etcd.Permission) int {
		if a.Key < b.Key {
			return -1
		}
		return 1
	})
	eventually(t, "role "+role, func() error {
		if perms, _ := e.fake().Role(role); !slices.Equal(perms, want) {
			return fmt.Errorf("role = %+v, want %+v", perms, want)
		}
		return nil
	})
}

// testAuthDisabled: a user of a cluster without authentication is refused
// with a message and never reaches etcd; it is deleted at once.
func testAuthDisabled(t *testing.T, e *env) {
	e.createCluster(false)
	e.createUser("tenant-b", false, rw("/b/"))
	u := e.waitReady("tenant-b", metav1.ConditionFalse, etcdv1.ReasonAuthDisabled)
	if _, ok := e.fake().User("tenant-b"); ok || u.Status.SecretName != "" {
		t.Errorf("a user of a cluster without auth reached etcd or got a Secret: %+v", u.Status)
	}
	if err := e.c.Delete(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the EtcdUser gone", func() error {
		if _, err := e.user("tenant-b"); !apierrors.IsNotFound(err) {
			return errors.New("still there")
		}
		return nil
	})
	if n := e.fake().Calls("DeleteUser"); n != 0 {
		t.Errorf("DeleteUser called %d times for a user that never reached etcd", n)
	}
}

// testWaitingForCluster: a user waits for its cluster to exist, then for
// its authentication to be on, and is Ready once it is.
func testWaitingForCluster(t *testing.T, e *env) {
	e.createUser("tenant-c", false, rw("/c/"))
	e.waitReady("tenant-c", metav1.ConditionFalse, etcdv1.ReasonClusterNotFound)
	e.createCluster(true)
	e.waitReady("tenant-c", metav1.ConditionFalse, etcdv1.ReasonWaitingForCluster)
	e.setAvailable()
	u := e.waitReady("tenant-c", metav1.ConditionTrue, etcdv1.ReasonRolesApplied)
	if have, ok := e.fake().User("tenant-c"); !ok || have.Password != "" {
		t.Errorf("a user without spec.password: %+v, %t", have, ok)
	}
	if _, ok := e.secret(u.Status.SecretName).Data[user.PasswordKey]; ok {
		t.Error("a password in the Secret of a user without spec.password")
	}
}

// testNameConflict: a Secret under the user's Secret name that is not the
// EtcdUser's is left as it is, and the user says so.
func testNameConflict(t *testing.T, e *env) {
	name := resources.UserSecretName(clusterName, "tenant-d")
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{etcdv1.ManagedByLabel: "raftsman"}},
		Data: map[string][]byte{"mine": []byte("yes")}}
	if err := e.c.Create(t.Context(), theirs); err != nil {
		t.Fatal(err)
	}
	e.createCluster(true)
	e.setAvailable()
	e.createUser("tenant-d", false, rw("/d/"))
	e.waitReady("tenant-d", metav1.ConditionFalse, etcdv1.ReasonNameConflict)
	if got := e.secret(name); string(got.Data["mine"]) != "yes" || len(got.Data) != 1 {
		t.Errorf("the Secret that is not the user's was changed: %v", got.Data)
	}
	if _, ok := e.fake().User("tenant-d"); ok {
		t.Error("the user reached etcd without its Secret")
	}
}
