package kubernetes

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The examples decode strictly into their API types, and the headless Service is one
// (cluster DNS then gives one record per ready pod, what discovery: dns resolves).
func TestExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("examples", "vllm-headless-service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var svcs []corev1.Service
	if err := decode(b, &svcs); err != nil {
		t.Fatal(err)
	}
	s := svcs[0]
	if s.Kind != "Service" || s.Spec.ClusterIP != corev1.ClusterIPNone || s.Spec.PublishNotReadyAddresses ||
		len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "http" || s.Spec.Ports[0].Port != 8000 {
		t.Fatalf("headless Service %+v", s)
	}
}
