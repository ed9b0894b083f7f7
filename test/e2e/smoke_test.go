//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// etcdVersion is the etcd the tests run; its image must be on the cluster.
var etcdVersion = func() string {
	if v := os.Getenv("ETCD_VERSION"); v != "" {
		return v
	}
	return "3.6.16"
}()

func etcdImage() string { return "quay.io/coreos/etcd:v" + etcdVersion }

// smokePod is a lone etcd member with its data on a PVC, reachable under
// the headless Service "smoke".
func smokePod(ns string) *corev1.Pod {
	host := fmt.Sprintf("etcd-0.smoke.%s.svc.cluster.local", ns)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-0", Namespace: ns, Labels: map[string]string{"app": "smoke"}},
		Spec: corev1.PodSpec{
			Hostname:                      "etcd-0",
			Subdomain:                     "smoke",
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			SecurityContext:               &corev1.PodSecurityContext{FSGroup: ptr.To[int64](65532)},
			Containers: []corev1.Container{restrictedContainer(corev1.Container{
				Name:    "etcd",
				Image:   etcdImage(),
				Command: []string{"/usr/local/bin/etcd"},
				Args: []string{
					"--name=etcd-0", "--data-dir=/var/lib/etcd/data",
					"--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://" + host + ":2379",
					"--listen-peer-urls=http://0.0.0.0:2380", "--initial-advertise-peer-urls=http://" + host + ":2380",
					"--initial-cluster=etcd-0=http://" + host + ":2380", "--listen-metrics-urls=http://0.0.0.0:2381",
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(2381)}}, PeriodSeconds: 1},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
			})},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "smoke-data"},
			}}},
		},
	}
}

// TestLocalClusterSmoke checks the pieces every other test stands on: the
// locally built etcd image runs with a PVC from the default StorageClass,
// member DNS names resolve from another Pod, and data survives the Pod.
func TestLocalClusterSmoke(t *testing.T) {
	parallel(t)
	f := features.New("local cluster").
		Assess("an etcd Pod with a PVC serves clients by its DNS name and keeps its data", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: ns},
				Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
					Selector: map[string]string{"app": "smoke"}, Ports: []corev1.ServicePort{{Name: "client", Port: 2379}}},
			}
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "smoke-data", Namespace: ns},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
				},
			}
			for _, o := range []client.Object{svc, pvc, smokePod(ns)} {
				if err := k.c.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			waitReady := func() {
				waitFor(ctx, t, 2*time.Minute, "etcd-0 Ready", func() (bool, error) {
					p := &corev1.Pod{}
					if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "etcd-0"}, p); err != nil {
						return false, err
					}
					return podReady(p), nil
				})
			}
			waitReady()
			endpoint := fmt.Sprintf("--endpoints=http://etcd-0.smoke.%s.svc.cluster.local:2379", ns)
			out, err := k.runPod(ctx, ns, etcdImage(), "/usr/local/bin/etcdctl", endpoint, "endpoint", "health")
			if err != nil || !strings.Contains(out, "is healthy") {
				t.Fatalf("etcdctl endpoint health by DNS name: %v: %s", err, out)
			}
			if out, err := k.runPod(ctx, ns, etcdImage(), "/usr/local/bin/etcdctl", endpoint, "put", "smoke-key", "kept"); err != nil {
				t.Fatalf("put: %v: %s", err, out)
			}

			old := &corev1.Pod{}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "etcd-0"}, old); err != nil {
				t.Fatal(err)
			}
			if err := k.c.Delete(ctx, old); err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, time.Minute, "the old Pod to go", func() (bool, error) {
				err := k.c.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Pod{})
				return ignoreNotFound(err) == nil && err != nil, ignoreNotFound(err)
			})
			if err := k.c.Create(ctx, smokePod(ns)); err != nil {
				t.Fatal(err)
			}
			waitReady()
			out, err = k.runPod(ctx, ns, etcdImage(), "/usr/local/bin/etcdctl", endpoint, "get", "smoke-key", "--print-value-only")
			if err != nil || out != "kept" {
				t.Fatalf("value after the Pod came back = %q (%v), want %q", out, err, "kept")
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
