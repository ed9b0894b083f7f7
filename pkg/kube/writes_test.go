package kube

import "testing"

func TestResourceOf(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/api/v1/namespaces/ns/pods/name/status":                            "pods",
		"/api/v1/namespaces/ns/pods":                                        "pods",
		"/apis/etcd.raftsman.io/v1alpha1/namespaces/ns/etcdmembers/x":       "etcdmembers",
		"/apis/coordination.k8s.io/v1/namespaces/raftsman-system/leases/id": "leases",
		"/apis/events.k8s.io/v1/namespaces/ns/events":                       "events",
		"/api/v1/namespaces":                                                "namespaces",
		"/version":                                                          "other",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}
