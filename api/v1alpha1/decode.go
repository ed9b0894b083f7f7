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
	if err := json.UnmarshalCaseSensitivePreserveInts(b, (*plain)(c)); err != nil {
		*c = EtcdCluster{}
		return metadataOnly(b, err, &c.TypeMeta, &c.ObjectMeta)
	}
	delete(c.Annotations, UndecodableAnnotation) // only ever set here
	return nil
}

// UnmarshalJSON decodes an EtcdMember, or its metadata alone when the rest
// cannot be decoded (see UndecodableAnnotation).
func (m *EtcdMember) UnmarshalJSON(b []byte) error {
	type plain EtcdMember
	if err := json.UnmarshalCaseSensitivePreserveInts(b, (*plain)(m)); err != nil {
		*m = EtcdMember{}
		return metadataOnly(b, err, &m.TypeMeta, &m.ObjectMeta)
	}
	delete(m.Annotations, UndecodableAnnotation) // only ever set here
	return nil
}

// UnmarshalJSON decodes an EtcdBackup, or its metadata alone when the rest
// cannot be decoded (see UndecodableAnnotation).
func (bk *EtcdBackup) UnmarshalJSON(b []byte) error {
	type plain EtcdBackup
	if err := json.UnmarshalCaseSensitivePreserveInts(b, (*plain)(bk)); err != nil {
		*bk = EtcdBackup{}
		return metadataOnly(b, err, &bk.TypeMeta, &bk.ObjectMeta)
	}
	delete(bk.Annotations, UndecodableAnnotation) // only ever set here
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
