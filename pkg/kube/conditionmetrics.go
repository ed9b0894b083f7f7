package kube

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionLabels are the labels of a condition gauge, in the shape of
// kube-state-metrics: one series per status, 1 for the current one.
var ConditionLabels = []string{"namespace", "name", "type", "status", "reason"}

// CollectConditions sends the condition series of one object.
func CollectConditions(ch chan<- prometheus.Metric, desc *prometheus.Desc, namespace, name string, conds []metav1.Condition) {
	for _, c := range conds {
		for _, s := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
			v := 0.0
			if c.Status == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, namespace, name, c.Type, string(s), c.Reason)
		}
	}
}

// Register registers a collector, leaving one registered before in place:
// a test process may set up the same controller more than once.
func Register(reg prometheus.Registerer, c prometheus.Collector) error {
	err := reg.Register(c)
	if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
		return nil
	}
	return err
}
