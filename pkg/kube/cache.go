package kube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// CacheOptions keep a shard's cache to the objects of its own clusters:
// every object the operator makes for a cluster carries the cluster's shard
// label, so a replica holds in memory only the shards it runs. Of Secrets,
// only the operator's (certificates, credentials) are cached, and of them
// their metadata only (with NewCache, which refuses the rest); their data,
// and Secrets of users, are read past the cache. An empty shard caches
// every shard's objects, for tests that run the controllers without
// sharding.
//
// namespaces, when given, are the only namespaces whose objects are cached
// (--watch-namespaces): the operator then needs no right to list or watch
// anything elsewhere. None caches every namespace.
//
// Pods and PVCs are cached lean (see "What the cache keeps" below): only
// the fields the controllers read from them; Secrets as metadata.
func CacheOptions(shard string, namespaces ...string) cache.Options {
	managed, _ := labels.NewRequirement(etcdv1.ManagedByLabel, selection.Equals, []string{"raftsman"})
	secrets := labels.NewSelector().Add(*managed)
	// managedFields are about a fifth of a cached object and nothing here
	// reads them.
	opts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if shard != "" {
		inShard, _ := labels.NewRequirement(etcdv1.ShardLabel, selection.Equals, []string{shard})
		opts.DefaultLabelSelector = labels.NewSelector().Add(*inShard)
		secrets = secrets.Add(*inShard)
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = make(map[string]cache.Config, len(namespaces))
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	opts.ByObject = map[client.Object]cache.ByObject{
		// A transform of its own replaces DefaultTransform for its kind:
		// these drop managedFields with the rest.
		&corev1.Pod{}:                   {Transform: leanTransform(leanPod)},
		&corev1.PersistentVolumeClaim{}: {Transform: leanTransform(leanPVC)},
		&corev1.Service{}:               {Transform: leanTransform(leanService)},
		// Secrets: their metadata only, whoever reads them (NewCache
		// refuses the rest). A transform is still needed: the annotations
		// of other domains go, such as kubectl's last-applied-configuration,
		// which holds a Secret's data.
		&corev1.Secret{}: {Label: secrets, Transform: leanTransform(leanPartial)},
		// StorageClasses belong to no cluster and to no namespace: each
		// shard caches them all, whatever the watched namespaces (this is
		// one of the few cluster-wide reads, see controllers/setup.go).
		&storagev1.StorageClass{}: {Label: labels.Everything()},
	}
	return opts
}

// ParseNamespaces splits a comma-separated list of namespaces, dropping
// blanks and repeats; an empty list means every namespace.
func ParseNamespaces(list string) []string {
	var out []string
	seen := map[string]bool{}
	for _, ns := range strings.Split(list, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		out = append(out, ns)
	}
	return out
}

// What the cache keeps
//
// A shard caches every Pod and PVC of its clusters: at thousands of
// clusters, those are most of the operator's heap, and most of a Pod is
// what the kubelet and the scheduler need (containers, volumes, affinity,
// container images and IDs), never read here. So the cache keeps of them
// only what the controllers read; everything else is dropped before the
// object is stored. What reads past the cache (an APIReader, the direct
// client of the relabelling at start, the kubectl plugin) sees objects
// whole.
//
// Pod (leanPod), of every Pod of a shard (member and agent Pods):
//
//	field                                read by
//	metadata.name, namespace             every reader (keys, messages, events)
//	metadata.uid                         member: the UID precondition of every Pod deletion; events
//	metadata.resourceVersion             events' object reference
//	metadata.generation                  (the object's identity; not read)
//	metadata.creationTimestamp           data reconcileRestore: age of a failed restore check Pod
//	metadata.deletionTimestamp           member: every step and condition (terminating Pods)
//	metadata.deletionGracePeriodSeconds  member releaseLostPod
//	metadata.labels (all)                every List by label, which the cache answers from
//	                                     them (cluster selectsServing, oldPodsGone); the
//	                                     serving label (selectsServing, member syncServing,
//	                                     setServingCondition); kube.ToCluster (Pod watch)
//	metadata.annotations etcd.raftsman.io/*
//	                                     resources.PodUpToDate, NeedsHashStamp (pod-spec-hash,
//	                                     trust-revision): member restartForSpec, setReadyCondition
//	metadata.ownerReferences             Owns(Pod) of the member, data and backup controllers
//	metadata.finalizers                  (not read; kept so that no patch could drop one)
//	spec.nodeName                        member podLost, releaseLostPod, unschedulable
//	status.phase, reason, message        member replaceFailedPod; agent.PodResult (data, backup)
//	status.conditions                    member podReady (Ready), unschedulable (PodScheduled)
//	status.containerStatuses[]: name, ready, restartCount, state, lastState (whole)
//	                                     member podFailing, etcdRefusedData; agent.PodResult
//	status.initContainerStatuses[]: the same
//	                                     member dataRefused (check-data's result)
//
// Dropped: managedFields, generateName, annotations of other domains (the
// user's, a CNI's); the whole spec but nodeName (containers and their env,
// args, probes and resources, init containers, volumes, affinity,
// tolerations...): no controller compares a Pod's spec, a Pod is restarted
// on its pod-spec-hash annotation; the Pod's IPs, hostIP, startTime,
// qosClass, ephemeral container statuses, and of each container status
// the image, imageID, containerID, started, resources, volumeMounts, user.
//
// PersistentVolumeClaim (leanPVC): metadata as for Pods (labels: the data
// controller's list and its member label, kube.ToCluster, member
// retainVolume; ownerReferences: Owns(PVC), retainVolume; deletionTimestamp:
// member observe and expandPVC, data observeStorage; resourceVersion:
// expandPVC); spec.resources (member expandPVC, data observeStorage),
// spec.storageClassName (data expandable, cluster adoptStorageClass);
// status.phase and status.capacity (data observeStorage). Dropped: the
// binding and provisioning annotations, accessModes, volumeName,
// volumeMode, dataSource and selector, status.accessModes, conditions and
// allocated resources.
//
// Secret, metadata only (leanPartial), of the operator's own Secrets of a
// shard (CacheOptions): each cluster's CA, peer, server and client
// certificates and root password, cert-manager's certificates, and each
// EtcdUser's Secret. The watches of Secrets are metadata watches, and
// NewCache refuses whatever would cache them whole (a typed Get or List
// through the cache or the cached client, a typed watch): it would start
// a second informer holding every Secret, keys included, without a word.
//
//	field                                read by
//	metadata.name, namespace             every reader
//	metadata.resourceVersion             credentials.Cache (the client certificate is read again
//	                                     only at a new version: cluster etcdClient, user
//	                                     readCluster and deleteFromEtcd); tls steadyPasses (a
//	                                     pass is repeated only over the versions it read)
//	metadata.labels (all)                the label and shard selection; kube.ToCluster (tls
//	                                     watch), user usersOfCA
//	metadata.ownerReferences             tls ownSecret (a Secret of an earlier cluster), user
//	                                     ownSecret (a Secret of another EtcdUser); Owns(Secret)
//	                                     of the user controller
//	metadata.uid, generation, creationTimestamp, deletionTimestamp,
//	deletionGracePeriodSeconds, finalizers, annotations etcd.raftsman.io/*
//	                                     (not read; leanMeta keeps them for every kind)
//
// Dropped: the data and type, which a metadata watch never brings;
// managedFields; the annotations of other domains, among which kubectl's
// last-applied-configuration, which holds a Secret's data. The data is
// read from the API server (the APIReader) only where a pass needs it:
// the cluster and user controllers' client certificate once per version
// (credentials.Cache), the tls controller's cluster Secrets when a pass may
// have something to do (steady.go), the user controller's CA and user
// Secret on its passes, which come on changes only. An idle cluster costs
// no API read.
//
// Service (leanService), the peer and client Services of each cluster:
// metadata as for Pods (ownerReferences: cluster ownedOrForeign and
// Owns(Service); resourceVersion: the optimistic lock of ensureServices'
// patch); spec.selector (cluster servicesMatch, selectsServing),
// spec.ports (servicesMatch: name, port, targetPort; kept whole),
// spec.publishNotReadyAddresses (servicesMatch), spec.type and
// spec.clusterIP (not read; they say what kind of Service it is). Dropped:
// clusterIPs, ipFamilies and their policy, session affinity, traffic
// policies, the status.
//
// Kept whole: the operator's own kinds; PodDisruptionBudgets, which the
// cluster controller writes back with Update (the object sent whole: a
// lean copy would wipe what it dropped); StorageClasses (few,
// cluster-wide). managedFields are dropped from every kind.
//
// Whoever reads a new field of a Pod, PVC or Service from the cache adds
// it here, or reads past the cache. A cached Pod, PVC or Service is never
// written back whole (Update): only patched from a copy of itself
// (client.MergeFrom), which sends what changed alone.

// ownDomain is the prefix of the annotations the operator reads: its API
// group's.
var ownDomain = etcdv1.GroupVersion.Group + "/"

// leanTransform is the cache transform of a kind whose objects lean makes
// lean. The informer hands it each object as decoded, before it is stored,
// concurrently for different objects: lean builds a new object of what it
// keeps and changes nothing of its input, and gives the same object again
// for one already lean (a tombstone holds an object of the store).
// Anything else, such as the metadata-only object of a metadata watch of
// the kind, just loses its managedFields, as every kind does.
func leanTransform[T any](lean func(T) T) toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		switch o := in.(type) {
		case T:
			return lean(o), nil
		case toolscache.DeletedFinalStateUnknown:
			// client-go never passes one; were it to, its object is one the
			// store holds, already lean.
			if obj, ok := o.Obj.(T); ok {
				o.Obj = lean(obj)
			}
			return o, nil
		}
		return strip(in)
	}
}

// leanMeta is what the cache keeps of an object's metadata: its identity,
// lifecycle, labels, owners and finalizers, and the annotations of the
// operator's domain.
func leanMeta(in *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:                       in.Name,
		Namespace:                  in.Namespace,
		UID:                        in.UID,
		ResourceVersion:            in.ResourceVersion,
		Generation:                 in.Generation,
		CreationTimestamp:          in.CreationTimestamp,
		DeletionTimestamp:          in.DeletionTimestamp,
		DeletionGracePeriodSeconds: in.DeletionGracePeriodSeconds,
		Labels:                     in.Labels,
		Annotations:                ownAnnotations(in.Annotations),
		OwnerReferences:            in.OwnerReferences,
		Finalizers:                 in.Finalizers,
	}
}

// ownAnnotations are the annotations of the operator's domain, nil when
// there are none.
func ownAnnotations(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if strings.HasPrefix(k, ownDomain) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// leanPod is what the cache keeps of a Pod (see the table above).
func leanPod(p *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   p.TypeMeta,
		ObjectMeta: leanMeta(&p.ObjectMeta),
		Spec:       corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{
			Phase:                 p.Status.Phase,
			Reason:                p.Status.Reason,
			Message:               p.Status.Message,
			Conditions:            p.Status.Conditions,
			InitContainerStatuses: leanContainerStatuses(p.Status.InitContainerStatuses),
			ContainerStatuses:     leanContainerStatuses(p.Status.ContainerStatuses),
		},
	}
}

func leanContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i := range in {
		cs := &in[i]
		out[i] = corev1.ContainerStatus{
			Name:                 cs.Name,
			Ready:                cs.Ready,
			RestartCount:         cs.RestartCount,
			State:                cs.State,
			LastTerminationState: cs.LastTerminationState,
		}
	}
	return out
}

// leanPartial is what the cache keeps of an object it holds as metadata
// only (Secrets).
func leanPartial(p *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: p.TypeMeta, ObjectMeta: leanMeta(&p.ObjectMeta)}
}

// leanService is what the cache keeps of a Service (see above).
func leanService(svc *corev1.Service) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   svc.TypeMeta,
		ObjectMeta: leanMeta(&svc.ObjectMeta),
		Spec: corev1.ServiceSpec{
			Type:                     svc.Spec.Type,
			ClusterIP:                svc.Spec.ClusterIP,
			Selector:                 svc.Spec.Selector,
			Ports:                    svc.Spec.Ports,
			PublishNotReadyAddresses: svc.Spec.PublishNotReadyAddresses,
		},
	}
}

// leanPVC is what the cache keeps of a PersistentVolumeClaim (see the
// table above).
func leanPVC(p *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		TypeMeta:   p.TypeMeta,
		ObjectMeta: leanMeta(&p.ObjectMeta),
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: p.Spec.StorageClassName,
			Resources:        p.Spec.Resources,
		},
		Status: corev1.PersistentVolumeClaimStatus{
			Phase:    p.Status.Phase,
			Capacity: p.Status.Capacity,
		},
	}
}
