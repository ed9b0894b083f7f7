package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/raftsman/raftsman/pkg/pki"
)

func TestPrefixPermission(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		prefix, key, end string
	}{
		{prefix: "/tenants/a/", key: "/tenants/a/", end: "/tenants/a0"},
		{prefix: "/", key: "/", end: "0"},
		{prefix: "", key: "\x00", end: "\x00"},
		{prefix: "a\xff", key: "a\xff", end: "b"},
	} {
		p := PrefixPermission(tt.prefix, AccessRead)
		if p.Key != tt.key || p.RangeEnd != tt.end {
			t.Errorf("PrefixPermission(%q) = [%q, %q), want [%q, %q)", tt.prefix, p.Key, p.RangeEnd, tt.key, tt.end)
		}
	}
}

// TestFakeUsers: the fake keeps one role per user with exactly the
// permissions asked, drops other roles, and never makes root.
func TestFakeUsers(t *testing.T) {
	t.Parallel()
	a := PrefixPermission("/a/", AccessReadWrite)
	b := PrefixPermission("/b/", AccessRead)
	for _, tt := range []struct {
		name      string
		before    func(*Fake)
		ensure    []User
		wantErr   error
		wantUser  *FakeUser
		wantPerms []Permission
	}{
		{name: "new user without password", ensure: []User{{Name: "u", Role: "r", Permissions: []Permission{a}}},
			wantUser: &FakeUser{Roles: []string{"r"}}, wantPerms: []Permission{a}},
		{name: "prefix changes", ensure: []User{{Name: "u", Role: "r", Permissions: []Permission{a}}, {Name: "u", Role: "r", Permissions: []Permission{b}}},
			wantUser: &FakeUser{Roles: []string{"r"}}, wantPerms: []Permission{b}},
		{name: "other roles go", before: func(f *Fake) { f.AddUser("u", "", "root", "x") }, ensure: []User{{Name: "u", Role: "r", Permissions: []Permission{a}}},
			wantUser: &FakeUser{Roles: []string{"r"}}, wantPerms: []Permission{a}},
		{name: "password kept unless set", ensure: []User{{Name: "u", Role: "r", Password: "p1"}, {Name: "u", Role: "r", Password: "p2"}},
			wantUser: &FakeUser{Password: "p1", Roles: []string{"r"}}, wantPerms: []Permission{}},
		{name: "password set", ensure: []User{{Name: "u", Role: "r", Password: "p1"}, {Name: "u", Role: "r", Password: "p2", SetPassword: true}},
			wantUser: &FakeUser{Password: "p2", Roles: []string{"r"}}, wantPerms: []Permission{}},
		{name: "root refused", ensure: []User{{Name: "root", Role: "r"}}, wantErr: ErrRootUser},
		{name: "root role refused", ensure: []User{{Name: "u", Role: "root"}}, wantErr: ErrRootUser},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := NewFake()
			if tt.before != nil {
				tt.before(f)
			}
			var err error
			for _, u := range tt.ensure {
				err = f.EnsureUser(t.Context(), u)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("EnsureUser: %v, want %v", err, tt.wantErr)
			}
			if tt.wantUser == nil {
				return
			}
			u, ok := f.User("u")
			if !ok || u.Password != tt.wantUser.Password || !slices.Equal(u.Roles, tt.wantUser.Roles) {
				t.Errorf("user = %+v, %t; want %+v", u, ok, *tt.wantUser)
			}
			if perms, _ := f.Role("r"); !slices.Equal(perms, tt.wantPerms) {
				t.Errorf("role = %+v, want %+v", perms, tt.wantPerms)
			}
			if err := f.DeleteUser(t.Context(), "u", "r"); err != nil {
				t.Fatal(err)
			}
			if _, ok := f.User("u"); ok {
				t.Error("the user is still there after DeleteUser")
			}
			if err := f.DeleteUser(t.Context(), "u", "r"); err != nil {
				t.Errorf("DeleteUser of a user gone: %v", err)
			}
		})
	}
}

// TestRealUsers runs EnsureUser and DeleteUser against a real etcd with
// authentication on, and checks what the user can reach with its password.
func TestRealUsers(t *testing.T) {
	endpoint := startLocalEtcd(t)
	ctx := t.Context()
	root := dial(t, endpoint, "", "")
	admin := &realClient{cli: root}
	// A user someone made root by hand loses root when the operator takes it over.
	if _, err := root.RoleAdd(ctx, "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.UserAdd(ctx, "tenant-a", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.UserGrantRole(ctx, "tenant-a", "root"); err != nil {
		t.Fatal(err)
	}
	u := User{Name: "tenant-a", Role: "raftsman-user-tenant-a", Password: "secret-a", SetPassword: true,
		Permissions: []Permission{PrefixPermission("/a/", AccessReadWrite), PrefixPermission("/shared/", AccessRead)}}
	if err := admin.EnsureUser(ctx, u); err != nil {
		t.Fatalf("EnsureUser: %v", err)
	}
	if err := admin.EnableAuth(ctx, "root-pw"); err != nil {
		t.Fatalf("EnableAuth: %v", err)
	}
	admin = &realClient{cli: dial(t, endpoint, "root", "root-pw")}
	user := dial(t, endpoint, "tenant-a", "secret-a")
	checkAccess(t, user, map[string]bool{"/a/x": true, "/b/x": false, "/shared/x": false, "/a": false})
	if _, err := user.Get(ctx, "/shared/", clientv3.WithPrefix()); err != nil {
		t.Errorf("read /shared/: %v", err)
	}
	if _, err := user.UserList(ctx); err == nil {
		t.Error("the user can list users: it kept the root role")
	}

	u.Permissions, u.SetPassword = []Permission{PrefixPermission("/b/", AccessReadWrite)}, false
	if err := admin.EnsureUser(ctx, u); err != nil {
		t.Fatalf("EnsureUser with other prefixes: %v", err)
	}
	checkAccess(t, user, map[string]bool{"/a/x": false, "/b/x": true})

	if err := admin.DeleteUser(ctx, u.Name, u.Role); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	if err := admin.DeleteUser(ctx, u.Name, u.Role); err != nil {
		t.Fatalf("DeleteUser again: %v", err)
	}
	if _, err := admin.cli.RoleGet(ctx, u.Role); !errors.Is(rpctypes.Error(err), rpctypes.ErrRoleNotFound) {
		t.Errorf("the role is still there: %v", err)
	}
	if err := admin.EnsureUser(ctx, User{Name: "root", Role: "r"}); !errors.Is(err, ErrRootUser) {
		t.Errorf("EnsureUser(root) = %v, want ErrRootUser", err)
	}
}

// TestRealCertificateUser: a user made without a password logs in with a
// client certificate whose common name is its name, reaches its prefix
// only, and reaches nothing once deleted, on the connection it had open.
func TestRealCertificateUser(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca, err := pki.NewCA("test CA", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(name string, req pki.Request) Credentials {
		kp, err := pki.Issue(ca, req, now)
		if err != nil {
			t.Fatal(err)
		}
		for suffix, b := range map[string][]byte{".crt": kp.CertPEM, ".key": kp.KeyPEM} {
			if err := os.WriteFile(filepath.Join(dir, name+suffix), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return Credentials{CertPEM: kp.CertPEM, KeyPEM: kp.KeyPEM, CAPEM: ca.CertPEM}
	}
	issue("server", pki.Request{CommonName: "etcd-server", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: pki.UsageServer, Lifetime: time.Hour})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	rootCreds := issue("root", pki.Request{CommonName: "root", Usage: pki.UsageClient, Lifetime: time.Hour})
	userCreds := issue("tenant-a", pki.Request{CommonName: "tenant-a", Usage: pki.UsageClient, Lifetime: time.Hour})
	rootTLS, err := rootCreds.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	endpoint := startLocalEtcdWith(t, "https", []string{"--cert-file", filepath.Join(dir, "server.crt"), "--key-file", filepath.Join(dir, "server.key"),
		"--trusted-ca-file", filepath.Join(dir, "ca.crt"), "--client-cert-auth"}, rootTLS)
	factory := NewClientFactory()
	t.Cleanup(func() { factory.Forget("c") })
	admin, err := factory.Get(t.Context(), "c", []string{endpoint}, rootCreds)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.EnableAuth(t.Context(), "root-pw"); err != nil {
		t.Fatalf("EnableAuth: %v", err)
	}
	// The questions go over the member's own TLS connection, with the
	// same certificate.
	if _, list, err := admin.MemberList(t.Context()); err != nil || len(list) != 1 {
		t.Fatalf("MemberList over TLS: %+v, %v", list, err)
	}
	if _, err := admin.Status(t.Context(), endpoint); err != nil {
		t.Fatalf("Status over TLS: %v", err)
	}
	if _, err := admin.Alarms(t.Context()); err != nil {
		t.Fatalf("Alarms over TLS: %v", err)
	}
	u := User{Name: "tenant-a", Role: "raftsman-user-tenant-a", Permissions: []Permission{PrefixPermission("/a/", AccessReadWrite)}}
	if err := admin.EnsureUser(t.Context(), u); err != nil {
		t.Fatalf("EnsureUser: %v", err)
	}
	userTLS, err := userCreds.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	user := dialTLS(t, endpoint, "", "", userTLS)
	checkAccess(t, user, map[string]bool{"/a/x": true, "/b/x": false})
	if err := admin.DeleteUser(t.Context(), u.Name, u.Role); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	checkAccess(t, user, map[string]bool{"/a/x": false})
	if _, err := user.Get(t.Context(), "/a/x"); !errors.Is(rpctypes.Error(err), rpctypes.ErrPermissionDenied) {
		t.Errorf("read with a deleted user's certificate: %v, want permission denied", err)
	}
}

// checkAccess writes each key and says whether etcd let the user.
func checkAccess(t *testing.T, c *clientv3.Client, want map[string]bool) {
	t.Helper()
	for key, ok := range want {
		_, err := c.Put(t.Context(), key, "v")
		if got := err == nil; got != ok {
			t.Errorf("put %s: allowed %t, want %t (%v)", key, got, ok, err)
		}
		if err != nil && !errors.Is(rpctypes.Error(err), rpctypes.ErrPermissionDenied) {
			t.Errorf("put %s: %v, want permission denied", key, err)
		}
	}
}

func dial(t *testing.T, endpoint, user, password string) *clientv3.Client {
	t.Helper()
	return dialTLS(t, endpoint, user, password, nil)
}

func dialTLS(t *testing.T, endpoint, user, password string, tc *tls.Config) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, Username: user, Password: password, TLS: tc,
		DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// startLocalEtcd runs one etcd member on loopback, from the envtest
// assets, and returns its client URL. Without the binary the test skips.
func startLocalEtcd(t *testing.T) string {
	t.Helper()
	return startLocalEtcdWith(t, "http", nil, nil)
}

// startLocalEtcdWith runs it with scheme, extra flags, and a client TLS
// configuration to check it is up with.
func startLocalEtcdWith(t *testing.T, scheme string, flags []string, tc *tls.Config) string {
	t.Helper()
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "etcd")
	if fi, err := os.Stat(bin); os.Getenv("KUBEBUILDER_ASSETS") == "" || err != nil || fi.IsDir() {
		t.Skip("no etcd binary in KUBEBUILDER_ASSETS (make envtest-assets)")
	}
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	client, peer := fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cmd := exec.Command(bin, append([]string{"--name", "u", "--data-dir", t.TempDir(), "--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "u=" + peer, "--log-level", "error"}, flags...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() })
	// etcd's client waits for the connection: one read tells it is up.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := dialTLS(t, client, "", "", tc).Get(ctx, "ready"); err != nil {
		t.Fatalf("etcd at %s not ready: %v", client, err)
	}
	return client
}
