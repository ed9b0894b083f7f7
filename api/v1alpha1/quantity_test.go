package v1alpha1

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestQuantityDecoding: a quantity decodes from text or a number and
// converts to the Kubernetes type; text Go cannot parse fails the decode
// (the object is then undecodable, and reported), never later.
func TestQuantityDecoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		json, want string
		fails      bool
	}{
		{json: `"500m"`, want: "500m"},
		{json: `"1.5Gi"`, want: "1536Mi"},
		{json: `268435456`, want: "268435456"},
		{json: `2`, want: "2"},
		{json: `"1e3"`, want: "1e3"},
		{json: `"1e1.5"`, fails: true},
		{json: `"lots"`, fails: true},
		{json: `true`, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			var l ResourceList
			err := json.Unmarshal([]byte(`{"memory":`+tt.json+`}`), &l)
			if tt.fails {
				if err == nil {
					t.Fatalf("decoded %q, want an error", l)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := l.Core()[corev1.ResourceMemory]
			if got.String() != tt.want {
				t.Errorf("Core() = %s, want %s", got.String(), tt.want)
			}
		})
	}
	if (ResourceList{}).Core() != nil {
		t.Error("an empty list converts to a non-nil one")
	}
}
