// Package kubernetes holds the Kustomize base and overlays of the gateway (the control plane,
// and one data plane per residency region) and the test that renders them in-process and
// decodes every object strictly into the official API types.
package kubernetes

import (
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/sekgate/gateway/deploy/internal/binflags"
)

// overlays are the deployable units: the fleet's control plane and a data plane per region.
var overlays = []string{"controlplane", "se", "eu", "any"}

// manifest is one rendered overlay, each object decoded into its API type.
type manifest struct {
	overlay      string
	deployments  []appsv1.Deployment
	statefulSets []appsv1.StatefulSet
	services     []corev1.Service
	configMaps   []corev1.ConfigMap
	secrets      []corev1.Secret
	pdbs         []policyv1.PodDisruptionBudget
	hpas         []autoscalingv2.HorizontalPodAutoscaler
	policies     []networkingv1.NetworkPolicy
}

// apiVersions is every kind the manifests may hold, with its API version.
var apiVersions = map[string]string{
	"Deployment": "apps/v1", "StatefulSet": "apps/v1", "Service": "v1", "ConfigMap": "v1",
	"Secret": "v1", "PodDisruptionBudget": "policy/v1", "HorizontalPodAutoscaler": "autoscaling/v2",
	"NetworkPolicy": "networking.k8s.io/v1",
}

// render runs kustomize on the overlay and decodes each object strictly: a field the API
// type does not know is an error.
func render(t *testing.T, overlay string) manifest {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join("overlays", overlay))
	if err != nil {
		t.Fatalf("kustomize %s: %v", overlay, err)
	}
	m := manifest{overlay: overlay}
	for _, r := range res.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("%s %s/%s", r.GetKind(), overlay, r.GetName())
		if want, ok := apiVersions[r.GetKind()]; !ok || r.GetApiVersion() != want {
			t.Errorf("%s: apiVersion %q, kind known: %v", id, r.GetApiVersion(), ok)
			continue
		}
		if err := m.add(r.GetKind(), b); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	return m
}

func (m *manifest) add(kind string, b []byte) error {
	switch kind {
	case "Deployment":
		return decode(b, &m.deployments)
	case "StatefulSet":
		return decode(b, &m.statefulSets)
	case "Service":
		return decode(b, &m.services)
	case "ConfigMap":
		return decode(b, &m.configMaps)
	case "Secret":
		return decode(b, &m.secrets)
	case "PodDisruptionBudget":
		return decode(b, &m.pdbs)
	case "HorizontalPodAutoscaler":
		return decode(b, &m.hpas)
	case "NetworkPolicy":
		return decode(b, &m.policies)
	}
	return fmt.Errorf("unexpected kind %s", kind)
}

func decode[T any](b []byte, into *[]T) error {
	var v T
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		return fmt.Errorf("strict decode: %w", err)
	}
	*into = append(*into, v)
	return nil
}

// workload is a pod template and what owns it.
type workload struct {
	kind, name, namespace string
	selector              map[string]string
	template              corev1.PodTemplateSpec
	claims                []corev1.PersistentVolumeClaim
}

func (m manifest) workloads() []workload {
	var out []workload
	for _, d := range m.deployments {
		out = append(out, workload{"Deployment", d.Name, d.Namespace, d.Spec.Selector.MatchLabels, d.Spec.Template, nil})
	}
	for _, s := range m.statefulSets {
		out = append(out, workload{"StatefulSet", s.Name, s.Namespace, s.Spec.Selector.MatchLabels, s.Spec.Template, s.Spec.VolumeClaimTemplates})
	}
	return out
}

// flagsOf returns the flags each binary defines (built once per test run).
var flagsOf = sync.OnceValues(func() (map[string]map[string]bool, error) {
	return binflags.Flags("dataplane", "controlplane")
})

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
