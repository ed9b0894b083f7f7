//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
)

// retryingWriter puts keys all the time; a failed put is retried with a
// fresh client (re-reading credentials) before it counts as failed.
type retryingWriter struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  []string
	// retried counts puts that failed once; lost counts those that still
	// failed after every retry.
	retried, lost int
}

func startRetryingWriter(ctx context.Context, connect func() (*clientv3.Client, error), prefix string) *retryingWriter {
	ctx, cancel := context.WithCancel(ctx)
	w := &retryingWriter{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		cli, _ := connect()
		defer func() {
			if cli != nil {
				_ = cli.Close()
			}
		}()
		for i := 0; ctx.Err() == nil; i++ {
			key := fmt.Sprintf("%s%07d", prefix, i)
			ok := false
			for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
				if cli != nil {
					c, cancel := context.WithTimeout(ctx, 2*time.Second)
					_, err := cli.Put(c, key, key)
					cancel()
					if err == nil {
						ok = true
						break
					}
				}
				w.mu.Lock()
				w.retried++
				w.mu.Unlock()
				time.Sleep(500 * time.Millisecond)
				if cli != nil {
					_ = cli.Close()
				}
				cli, _ = connect()
			}
			w.mu.Lock()
			if ok {
				w.acked = append(w.acked, key)
			} else if ctx.Err() == nil {
				w.lost++
			}
			w.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return w
}

func (w *retryingWriter) stop() (acked []string, retried, lost int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked), w.retried, w.lost
}

// tryPut connects with cfg and puts one key; the error says why not.
func tryPut(ctx context.Context, cfg clientv3.Config) error {
	cli, err := clientv3.New(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }()
	c, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	_, err = cli.Put(c, "probe", "x")
	return err
}

// clusterCA is the operator's CA of a cluster, to sign test certificates.
func (k *kube) clusterCA(ctx context.Context, t *testing.T, c *etcdv1.EtcdCluster) *pki.KeyPair {
	t.Helper()
	d := k.secretData(ctx, t, c.Namespace, c.Status.TLS.CASecretName)
	ca, err := pki.ParseKeyPair(d[pki.CertKey], d[pki.KeyKey])
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func clientCert(t *testing.T, ca *pki.KeyPair, cn string) *pki.KeyPair {
	t.Helper()
	kp, err := pki.Issue(ca, pki.Request{CommonName: cn, Usage: pki.UsageClient, Lifetime: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func getCluster(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey) *etcdv1.EtcdCluster {
	t.Helper()
	c := &etcdv1.EtcdCluster{}
	if err := k.c.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func conditionTrue(c *etcdv1.EtcdCluster, typ string) error {
	cond := meta.FindStatusCondition(c.Status.Conditions, typ)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != c.Generation {
		return fmt.Errorf("%s = %+v", typ, cond)
	}
	return nil
}

func TestTLSAndAuth(t *testing.T) {
	parallel(t)
	const name = "sec"
	var key client.ObjectKey
	f := features.New("tls and auth").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			c := newCluster(namespaceOf(ctx), name, 3)
			c.Spec.Auth.Enabled = true
			// Short-lived certificates, renewed a minute after issue: the
			// kubelet has two minutes to bring the new Secrets to the Pods.
			c.Spec.TLS.CertificateLifetime = &metav1.Duration{Duration: 3 * time.Minute}
			c.Spec.TLS.RenewBefore = &metav1.Duration{Duration: 2 * time.Minute}
			if err := k.c.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			key = client.ObjectKeyFromObject(c)
			waitConverged(ctx, t, k, key, 3, 3*time.Minute)
			waitFor(ctx, t, time.Minute, "AuthReady", func() (bool, error) {
				return conditionTrue(getCluster(ctx, t, k, key), etcdv1.ConditionAuthReady) == nil, nil
			})
			return ctx
		}).
		Assess("the serving certificate covers every name clients use", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := key.Namespace
			c := getCluster(ctx, t, k, key)
			names := []string{name, name + "." + ns, name + "." + ns + ".svc", name + "." + ns + ".svc.cluster.local"}
			for _, m := range c.Status.Members {
				names = append(names, fmt.Sprintf("%s.%s-peer.%s.svc", m.Name, name, ns), fmt.Sprintf("%s.%s-peer.%s.svc.cluster.local", m.Name, name, ns))
			}
			var endpoints []string
			for _, n := range names {
				endpoints = append(endpoints, fmt.Sprintf("https://%s:%d", n, etcdv1.ClientPort))
			}
			// etcdctl in a Pod, by DNS name, with the client Secret mounted.
			out, err := k.runPodSpec(ctx, ns, corev1.PodSpec{
				Containers: []corev1.Container{restrictedContainer(corev1.Container{
					Name: "etcdctl", Image: etcdImage(),
					Command: []string{"/usr/local/bin/etcdctl", "--endpoints=" + strings.Join(endpoints, ","),
						"--cacert=/tls/ca.crt", "--cert=/tls/tls.crt", "--key=/tls/tls.key", "endpoint", "health"},
					VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}},
				})},
				Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: c.Status.TLS.ClientSecretName, DefaultMode: ptr.To[int32](0o444)}}}},
			})
			if err != nil {
				t.Fatalf("etcdctl endpoint health by name: %v\n%s", err, out)
			}
			for _, ep := range endpoints {
				if !strings.Contains(out, ep+" is healthy") {
					t.Errorf("%s not healthy by name:\n%s", ep, out)
				}
			}
			// localhost, from inside a member, with the member's own files.
			member := c.Status.Members[0].Name
			out, err = kubectl(ctx, cfg, "-n", ns, "exec", member, "-c", "etcd", "--", "/usr/local/bin/etcdctl",
				"--endpoints=https://localhost:2379,https://127.0.0.1:2379", "--cacert=/etc/etcd/tls/server/ca.crt",
				"--cert=/etc/etcd/tls/server/tls.crt", "--key=/etc/etcd/tls/server/tls.key", "endpoint", "health")
			if err != nil || strings.Count(out, "is healthy") != 2 {
				t.Errorf("etcdctl by localhost in %s: %v\n%s", member, err, out)
			}
			t.Logf("connected by %d names", len(endpoints)+2)
			return ctx
		}).
		Assess("plain HTTP, a foreign CA and a user etcd does not know are refused; root works", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			c := getCluster(ctx, t, k, key)
			root := k.rootTLS(ctx, t, key)
			if err := tryPut(ctx, k.clientConfig(ctx, t, key, root)); err != nil {
				t.Errorf("root client certificate: %v", err)
			}
			if err := tryPut(ctx, k.clientConfig(ctx, t, key, nil)); err == nil {
				t.Errorf("plain HTTP put succeeded")
			}
			foreign, err := pki.NewCA("foreign", time.Hour, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			stranger := clientCert(t, foreign, "root")
			tc := root.Clone()
			tc.Certificates = nil
			withCert := func(kp *pki.KeyPair) *tls.Config {
				c := tc.Clone()
				cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
				if err != nil {
					t.Fatal(err)
				}
				c.Certificates = []tls.Certificate{cert}
				return c
			}
			if err := tryPut(ctx, k.clientConfig(ctx, t, key, withCert(stranger))); err == nil {
				t.Errorf("a certificate of a foreign CA was accepted")
			}
			if err := tryPut(ctx, k.clientConfig(ctx, t, key, tc)); err == nil {
				t.Errorf("a client without a certificate was accepted")
			}
			guest := withCert(clientCert(t, k.clusterCA(ctx, t, c), "guest"))
			err = tryPut(ctx, k.clientConfig(ctx, t, key, guest))
			if err == nil || !strings.Contains(err.Error(), "user name not found") && !strings.Contains(err.Error(), "permission denied") {
				t.Errorf("a trusted certificate of no etcd user, without password: err = %v, want refused by auth", err)
			}
			password := string(k.secretData(ctx, t, key.Namespace, c.Status.Auth.RootSecretName)["password"])
			withPassword := k.clientConfig(ctx, t, key, guest)
			withPassword.Username, withPassword.Password = "root", password
			if err := tryPut(ctx, withPassword); err != nil {
				t.Errorf("root with its password: %v", err)
			}
			withPassword.Password = "wrong"
			if err := tryPut(ctx, withPassword); err == nil {
				t.Errorf("root with a wrong password was accepted")
			}
			return ctx
		}).
		Assess("certificates renew while a client writes, and members restart with them", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			c := getCluster(ctx, t, k, key)
			firstExpiry := c.Status.TLS.NotAfter.Time
			// A client certificate of the test's own, valid all along.
			writerTLS := k.rootTLS(ctx, t, key).Clone()
			own := clientCert(t, k.clusterCA(ctx, t, c), "root")
			cert, err := tls.X509KeyPair(own.CertPEM, own.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			writerTLS.Certificates = []tls.Certificate{cert}
			wcfg := k.clientConfig(ctx, t, key, writerTLS)
			w := startRetryingWriter(ctx, func() (*clientv3.Client, error) { return clientv3.New(wcfg) }, "renew/")
			waitFor(ctx, t, 4*time.Minute, "renewed certificates", func() (bool, error) {
				c = getCluster(ctx, t, k, key)
				return c.Status.TLS.NotAfter.After(firstExpiry), nil
			})
			t.Logf("certificates renewed; the first ones expire at %s", firstExpiry.Format(time.RFC3339))
			// Once the first certificates expired, new connections to every
			// member only work with renewed ones on disk.
			if d := time.Until(firstExpiry) + 5*time.Second; d > 0 {
				time.Sleep(d)
			}
			for _, m := range c.Status.Members {
				pod := &corev1.Pod{}
				if err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: m.Name}, pod); err != nil {
					t.Fatal(err)
				}
				err := tryPut(ctx, dialByName(fmt.Sprintf("%s.%s-peer.%s.svc", m.Name, name, key.Namespace), pod.Status.PodIP, writerTLS))
				if err != nil {
					t.Errorf("new connection to %s after the first certificates expired: %v", m.Name, err)
				}
			}
			// A restarted member dials its peers anew: peer certificates too.
			victim := &corev1.Pod{}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: c.Status.Members[0].Name}, victim); err != nil {
				t.Fatal(err)
			}
			if err := k.c.Delete(ctx, victim); err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, 2*time.Minute, "the restarted member Ready", func() (bool, error) {
				p := &corev1.Pod{}
				if err := k.c.Get(ctx, client.ObjectKeyFromObject(victim), p); err != nil {
					return false, ignoreNotFound(err)
				}
				return p.UID != victim.UID && podReady(p), nil
			})
			waitConverged(ctx, t, k, key, 3, 2*time.Minute)
			acked, retried, lost := w.stop()
			t.Logf("writer: %d acknowledged, %d attempts retried, %d failed beyond retries", len(acked), retried, lost)
			if lost > 0 {
				t.Errorf("%d writes failed beyond retries during renewal", lost)
			}
			checkKeys(ctx, t, etcdClient(ctx, t, k, key), "renew/", acked)
			return ctx
		}).
		Assess("the CA rotates while a client writes: both CAs trusted, members restarted one at a time", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			c := getCluster(ctx, t, k, key)
			oldCA := k.clusterCA(ctx, t, c)
			oldRev := c.Status.TLS.TrustRevision
			// The writer trusts both CAs and presents a certificate of the
			// old one, as a client set up before the rotation would.
			writerTLS := k.rootTLS(ctx, t, key).Clone()
			own := clientCert(t, oldCA, "root")
			cert, err := tls.X509KeyPair(own.CertPEM, own.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			writerTLS.Certificates = []tls.Certificate{cert}
			wcfg := k.clientConfig(ctx, t, key, writerTLS)
			w := startRetryingWriter(ctx, func() (*clientv3.Client, error) { return clientv3.New(wcfg) }, "ca/")
			time.Sleep(2 * time.Second)

			start := time.Now()
			patch := client.MergeFrom(c.DeepCopy())
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[etcdv1.RotateCAAnnotation] = "e2e-1"
			if err := k.c.Patch(ctx, c, patch); err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, 4*time.Minute, "the new CA signing and every member restarted", func() (bool, error) {
				c = getCluster(ctx, t, k, key)
				st := c.Status.TLS
				if st.CARotationRequest != "e2e-1" || st.CARotation != "" || st.TrustRevision == oldRev || conditionTrue(c, etcdv1.ConditionTLSReady) != nil {
					return false, fmt.Errorf("status.tls %+v", st)
				}
				ca := k.clusterCA(ctx, t, c)
				if ca.Cert.SerialNumber.Cmp(oldCA.Cert.SerialNumber) == 0 {
					return false, fmt.Errorf("the old CA still signs")
				}
				leaf, err := pki.ParseCertsPEM(k.secretData(ctx, t, key.Namespace, st.PeerSecretName)[pki.CertKey])
				if err != nil || leaf[0].CheckSignatureFrom(ca.Cert) != nil {
					return false, fmt.Errorf("peer certificate not from the new CA yet")
				}
				members := &etcdv1.EtcdMemberList{}
				if err := k.c.List(ctx, members, client.InNamespace(key.Namespace)); err != nil {
					return false, err
				}
				for _, m := range members.Items {
					if m.Spec.TLS.TrustRevision == oldRev {
						return false, fmt.Errorf("member %s not restarted", m.Name)
					}
				}
				return true, nil
			})
			waitConverged(ctx, t, k, key, 3, 2*time.Minute)
			t.Logf("CA rotated and members restarted in %.1fs", time.Since(start).Seconds())
			acked, retried, lost := w.stop()
			t.Logf("writer: %d acknowledged, %d attempts retried, %d failed beyond retries", len(acked), retried, lost)
			if lost > 0 {
				t.Errorf("%d writes failed beyond retries during the CA rotation", lost)
			}
			// The rolling update reports each member once it is back on the
			// new trust (the last one may come a pass after its Pod is Ready).
			updated := map[string]bool{}
			waitFor(ctx, t, time.Minute, "a MemberUpdated event for each member", func() (bool, error) {
				evs, err := k.cs.CoreV1().Events(key.Namespace).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				for _, e := range evs.Items {
					if e.Reason == "MemberUpdated" && e.Related != nil {
						updated[e.Related.Name] = true
					}
				}
				return len(updated) == 3, fmt.Errorf("members updated %v", updated)
			})
			// A client that trusts only the new CA, with a certificate of it.
			newCA := k.clusterCA(ctx, t, c)
			fresh := tlsConfig(t, nil, nil, newCA.CertPEM)
			kp := clientCert(t, newCA, "root")
			if cert, err = tls.X509KeyPair(kp.CertPEM, kp.KeyPEM); err != nil {
				t.Fatal(err)
			}
			fresh.Certificates = []tls.Certificate{cert}
			// Members serve the new certificates once the kubelet has
			// brought the renewed Secrets to their Pods (its sync period).
			served := time.Now()
			waitFor(ctx, t, 3*time.Minute, "members serving certificates of the new CA", func() (bool, error) {
				return tryPut(ctx, k.clientConfig(ctx, t, key, fresh)) == nil, nil
			})
			t.Logf("a client of the new CA only connects %.1fs after the switch", time.Since(served).Seconds())
			checkKeys(ctx, t, etcdClient(ctx, t, k, key), "ca/", acked)
			return ctx
		}).
		Assess("the root password rotates while a client writes with it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			c := getCluster(ctx, t, k, key)
			secretName := c.Status.Auth.RootSecretName
			guestTLS := k.rootTLS(ctx, t, key).Clone()
			guest := clientCert(t, k.clusterCA(ctx, t, c), "guest")
			cert, err := tls.X509KeyPair(guest.CertPEM, guest.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			guestTLS.Certificates = []tls.Certificate{cert}
			withPassword := func(pw string) clientv3.Config {
				cfg := k.clientConfig(ctx, t, key, guestTLS)
				cfg.Username, cfg.Password = "root", pw
				return cfg
			}
			oldPassword := string(k.secretData(ctx, t, key.Namespace, secretName)["password"])
			// The writer reads the password from the Secret at each connect,
			// as an application mounting it would.
			w := startRetryingWriter(ctx, func() (*clientv3.Client, error) {
				sec := &corev1.Secret{}
				if err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: secretName}, sec); err != nil {
					return nil, err
				}
				return clientv3.New(withPassword(string(sec.Data["password"])))
			}, "rotate/")
			time.Sleep(2 * time.Second)
			sec := &corev1.Secret{}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: secretName}, sec); err != nil {
				t.Fatal(err)
			}
			newPassword := "rotated-" + oldPassword[:8]
			sec.Data["password"] = []byte(newPassword)
			if err := k.c.Update(ctx, sec); err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, time.Minute, "the new password applied", func() (bool, error) {
				c = getCluster(ctx, t, k, key)
				return c.Status.Auth != nil && c.Status.Auth.AppliedSecretVersion == sec.ResourceVersion && conditionTrue(c, etcdv1.ConditionAuthReady) == nil, nil
			})
			time.Sleep(3 * time.Second)
			acked, retried, lost := w.stop()
			t.Logf("writer: %d acknowledged, %d attempts retried, %d failed beyond retries", len(acked), retried, lost)
			if lost > 0 {
				t.Errorf("%d writes failed beyond retries during the rotation", lost)
			}
			if err := tryPut(ctx, withPassword(newPassword)); err != nil {
				t.Errorf("new password: %v", err)
			}
			if err := tryPut(ctx, withPassword(oldPassword)); err == nil {
				t.Errorf("old password still accepted")
			}
			checkKeys(ctx, t, etcdClient(ctx, t, k, key), "rotate/", acked)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
