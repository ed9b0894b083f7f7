package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/json"
)

// UndecodableAnnotation is set, in the operator's memory only, on an object
// whose spec or status it cannot decode: text an older CRD's schema
// allowed (a quantity like "1e1.5"), or an object stored past validation.
// Such an object decodes with its metadata alone and this annotation
// saying why, so that one tenant's object never fails the list of every
// cluster of a shard: the controllers never see it (pkg/kube.Decodable)
// and a Warning event names it. It is never written back.
const UndecodableAnnotation = "etcd.raftsman.io/undecodable"

// maxDecodeError bounds the error kept on an undecodable object.
const maxDecodeError = 512

// Undecodable is why obj could not be decoded, "" when it could.
func Undecodable(obj metav1.Object) string {
	return obj.GetAnnotations()[UndecodableAnnotation]
}

// UnmarshalJSON decodes an EtcdCluster, or its metadata alone when the
// rest cannot be decoded (see UndecodableAnnotation).
func (c *EtcdCluster) UnmarshalJSON(b []byte) error {
	type plain EtcdCluster
	return decodeOrMetadata(b, (*plain)(c), func() { *c = EtcdCluster{} }, &c.TypeMeta, &c.ObjectMeta)
}

// UnmarshalJSON decodes an EtcdMember, or its metadata alone when the rest
// cannot be decoded (see UndecodableAnnotation).
func (m *EtcdMember) UnmarshalJSON(b []byte) error {
	type plain EtcdMember
	return decodeOrMetadata(b, (*plain)(m), func() { *m = EtcdMember{} }, &m.TypeMeta, &m.ObjectMeta)
}

// UnmarshalJSON decodes an EtcdBackup, or its metadata alone when the rest
// cannot be decoded (see UndecodableAnnotation).
func (bk *EtcdBackup) UnmarshalJSON(b []byte) error {
	type plain EtcdBackup
	return decodeOrMetadata(b, (*plain)(bk), func() { *bk = EtcdBackup{} }, &bk.TypeMeta, &bk.ObjectMeta)
}

// decodeOrMetadata decodes b into whole (the object as a type without this
// method); when that fails, it clears the object (reset) and keeps its
// type and metadata alone, marked undecodable. The annotation is only ever
// set here: one read from the API server is dropped.
func decodeOrMetadata(b []byte, whole any, reset func(), tm *metav1.TypeMeta, om *metav1.ObjectMeta) error {
	if err := json.UnmarshalCaseSensitivePreserveInts(b, whole); err != nil {
		reset()
		return metadataOnly(b, err, tm, om)
	}
	delete(om.Annotations, UndecodableAnnotation)
	return nil
}

// metadataOnly decodes the type and metadata of an object whose whole
// decoding failed with cause, and marks it undecodable. When even the
// metadata cannot be decoded, cause is returned.
func metadataOnly(b []byte, cause error, tm *metav1.TypeMeta, om *metav1.ObjectMeta) error {
	var header struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.UnmarshalCaseSensitivePreserveInts(b, &header); err != nil || header.Metadata.Name == "" {
		return cause
	}
	*tm, *om = header.TypeMeta, header.Metadata
	why := cause.Error()
	if len(why) > maxDecodeError {
		why = why[:maxDecodeError] + "..."
	}
	if om.Annotations == nil {
		om.Annotations = map[string]string{}
	}
	om.Annotations[UndecodableAnnotation] = fmt.Sprintf("cannot decode %s: %s", om.Name, why)
	return nil
}
