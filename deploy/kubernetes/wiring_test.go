package kubernetes

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sekgate/gateway/controlplane/opsmetrics"
	"github.com/sekgate/gateway/dataplane/opsapi"
	"github.com/sekgate/gateway/deploy/internal/binflags"
)

// TestOverlays renders every overlay and checks each one's wiring: probes, ports, Secret and
// ConfigMap keys, selectors, flags, the restricted security context and resources.
func TestOverlays(t *testing.T) {
	var all []manifest
	for _, o := range overlays {
		m := render(t, o)
		all = append(all, m)
		t.Run(o, func(t *testing.T) {
			if len(m.workloads()) == 0 {
				t.Fatal("no workload rendered")
			}
			for _, w := range m.workloads() {
				checkWorkload(t, m, w)
			}
			checkServices(t, m)
			checkBudgetsAndScaling(t, m)
		})
	}
	t.Run("fleet", func(t *testing.T) { checkFleet(t, all) })
}

func checkWorkload(t *testing.T, m manifest, w workload) {
	t.Helper()
	id := w.kind + " " + w.name
	pod := w.template.Spec
	if !subset(w.selector, w.template.Labels) || len(w.selector) == 0 {
		t.Errorf("%s: selector %v does not match its pod labels %v", id, w.selector, w.template.Labels)
	}
	for _, c := range pod.TopologySpreadConstraints {
		if c.LabelSelector == nil || !subset(c.LabelSelector.MatchLabels, w.template.Labels) {
			t.Errorf("%s: topology spread %s selects other pods than its own", id, c.TopologyKey)
		}
	}
	if len(pod.TopologySpreadConstraints) == 0 {
		t.Errorf("%s: no topology spread", id)
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod security context must set runAsNonRoot and seccomp RuntimeDefault", id)
	}
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = true
		if v.ConfigMap != nil {
			for _, it := range v.ConfigMap.Items {
				requireKey(t, m, id, "ConfigMap", v.ConfigMap.Name, it.Key)
			}
		}
		if v.Secret != nil {
			for _, it := range v.Secret.Items {
				requireKey(t, m, id, "Secret", v.Secret.SecretName, it.Key)
			}
		}
	}
	for _, c := range w.claims {
		volumes[c.Name] = true
	}
	flags, err := flagsOf()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Containers {
		cid := id + "/" + c.Name
		binary := imageBinary(c.Image)
		known, ok := flags[binary]
		if !ok {
			t.Errorf("%s: image %s is not a gateway binary", cid, c.Image)
		}
		checkContainerSecurity(t, cid, c)
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
			if p != nil && p.HTTPGet != nil && !declaredPort(c, p.HTTPGet.Port) {
				t.Errorf("%s: probe %s on port %s, not a declared container port", cid, p.HTTPGet.Path, p.HTTPGet.Port.String())
			}
		}
		if binary == "dataplane" {
			checkOpsProbes(t, cid, c)
			checkGracePeriod(t, m, cid, pod, c)
		}
		if binary == "controlplane" {
			checkProbesServed(t, cid, c, opsmetrics.New().Handler(func(context.Context) error { return nil }, nil, nil))
		}
		if c.ReadinessProbe == nil || c.LivenessProbe == nil {
			t.Errorf("%s: needs readiness and liveness probes", cid)
		}
		for _, vm := range c.VolumeMounts {
			if !volumes[vm.Name] {
				t.Errorf("%s: mounts unknown volume %s", cid, vm.Name)
			}
		}
		for _, name := range envNames(t, m, cid, c) {
			if f, ok := binflags.EnvFlag(name); ok && !known[f] {
				t.Errorf("%s: %s sets --%s, which %s does not define", cid, name, f, binary)
			}
		}
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			if f, ok := strings.CutPrefix(a, "--"); ok {
				f, _, _ = strings.Cut(f, "=")
				if !known[f] {
					t.Errorf("%s: argument %s is not a flag of %s", cid, a, binary)
				}
			}
		}
	}
}

// checkOpsProbes asks the data plane's operator handler for each probe's path: the probes
// must be on the ops port and name paths it serves.
func checkOpsProbes(t *testing.T, id string, c corev1.Container) {
	t.Helper()
	checkProbesServed(t, id, c, opsapi.Handler(prometheus.NewRegistry(), noSnapshot{}, nil, nil))
}

// checkProbesServed asks a plane's ops handler h for each probe's path: the probes must be
// on the ops port and name paths h serves.
func checkProbesServed(t *testing.T, id string, c corev1.Container, h http.Handler) {
	t.Helper()
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			continue
		}
		if p.HTTPGet.Port.String() != "ops" {
			t.Errorf("%s: probe %s on port %s, want the ops listener", id, p.HTTPGet.Path, p.HTTPGet.Port.String())
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p.HTTPGet.Path, nil))
		if rec.Code == http.StatusNotFound || rec.Code == http.StatusMethodNotAllowed {
			t.Errorf("%s: probe path %s: the ops listener answers %d", id, p.HTTPGet.Path, rec.Code)
		}
	}
}

// checkGracePeriod: the kubelet's SIGKILL must not cut a drain, so the pod's grace period
// exceeds the node's shutdown delay, drain timeout and spool flush timeout together.
func checkGracePeriod(t *testing.T, m manifest, id string, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	env := map[string]string{}
	for _, src := range c.EnvFrom {
		if src.ConfigMapRef != nil {
			data, _ := m.configMap(src.ConfigMapRef.Name)
			maps.Copy(env, data)
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	var total time.Duration
	for _, name := range []string{"GATEWAY_SHUTDOWN_DELAY", "GATEWAY_DRAIN_TIMEOUT", "GATEWAY_SHUTDOWN_FLUSH_TIMEOUT"} {
		d, err := time.ParseDuration(env[name])
		if err != nil {
			t.Errorf("%s: %s must be set to a duration: %v", id, name, err)
		}
		total += d
	}
	grace := time.Duration(ptr.Deref(pod.TerminationGracePeriodSeconds, 30)) * time.Second
	if grace < total+5*time.Second {
		t.Errorf("%s: terminationGracePeriodSeconds %v, want at least the shutdown's %v plus 5s", id, grace, total)
	}
}

type noSnapshot struct{}

func (noSnapshot) Version() (int64, bool) { return 0, false }

func checkContainerSecurity(t *testing.T, id string, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("%s: no security context", id)
		return
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("%s: allowPrivilegeEscalation must be false", id)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("%s: root filesystem must be read-only", id)
	case sc.Capabilities == nil || len(sc.Capabilities.Add) > 0 || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL":
		t.Errorf("%s: capabilities must drop ALL and add none", id)
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("%s: privileged", id)
	}
	r := c.Resources
	if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
		t.Errorf("%s: needs cpu and memory requests and a memory limit, has %v / %v", id, r.Requests, r.Limits)
	}
	if c.Image == "" || !strings.Contains(c.Image, ":") {
		t.Errorf("%s: image %q without a tag", id, c.Image)
	}
}

// envNames returns the container's environment variable names, those of envFrom sources
// included, after checking that every referenced ConfigMap and Secret key exists.
func envNames(t *testing.T, m manifest, id string, c corev1.Container) []string {
	t.Helper()
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			requireKey(t, m, id, "Secret", r.Name, r.Key)
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			requireKey(t, m, id, "ConfigMap", r.Name, r.Key)
		}
	}
	for _, src := range c.EnvFrom {
		switch {
		case src.ConfigMapRef != nil:
			data, ok := m.configMap(src.ConfigMapRef.Name)
			if !ok {
				t.Errorf("%s: envFrom ConfigMap %s does not exist", id, src.ConfigMapRef.Name)
			}
			names = append(names, sortedKeys(data)...)
		case src.SecretRef != nil:
			data, ok := m.secret(src.SecretRef.Name)
			if !ok {
				t.Errorf("%s: envFrom Secret %s does not exist", id, src.SecretRef.Name)
			}
			names = append(names, sortedKeys(data)...)
		}
	}
	return names
}

func requireKey(t *testing.T, m manifest, id, kind, name, key string) {
	t.Helper()
	var data map[string]string
	var ok bool
	if kind == "Secret" {
		data, ok = m.secret(name)
	} else {
		data, ok = m.configMap(name)
	}
	if !ok {
		t.Errorf("%s: %s %s does not exist", id, kind, name)
		return
	}
	if _, ok := data[key]; !ok {
		t.Errorf("%s: %s %s has no key %s (has %v)", id, kind, name, key, sortedKeys(data))
	}
}

func (m manifest) configMap(name string) (map[string]string, bool) {
	for _, c := range m.configMaps {
		if c.Name == name {
			return c.Data, true
		}
	}
	return nil, false
}

func (m manifest) secret(name string) (map[string]string, bool) {
	for _, s := range m.secrets {
		if s.Name == name {
			data := map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
			for k, v := range s.StringData {
				data[k] = v
			}
			return data, true
		}
	}
	return nil, false
}

func checkServices(t *testing.T, m manifest) {
	t.Helper()
	for _, s := range m.services {
		id := "Service " + s.Name
		w := exactlyOne(t, id, m.workloads(), s.Namespace, s.Spec.Selector)
		if w == nil {
			continue
		}
		for _, p := range s.Spec.Ports {
			if !podPort(w.template.Spec, p.TargetPort) {
				t.Errorf("%s: port %s targets %s, which %s %s does not declare", id, p.Name, p.TargetPort.String(), w.kind, w.name)
			}
		}
	}
	for _, ss := range m.statefulSets {
		found := false
		for _, s := range m.services {
			found = found || (s.Name == ss.Spec.ServiceName && s.Spec.ClusterIP == corev1.ClusterIPNone)
		}
		if !found {
			t.Errorf("StatefulSet %s: serviceName %s is not a headless Service", ss.Name, ss.Spec.ServiceName)
		}
	}
	for _, np := range m.policies {
		id := "NetworkPolicy " + np.Name
		w := exactlyOne(t, id, m.workloads(), np.Namespace, np.Spec.PodSelector.MatchLabels)
		if w == nil {
			continue
		}
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port == nil || !podPort(w.template.Spec, *p.Port) {
					t.Errorf("%s: admits port %v, which %s does not declare", id, p.Port, w.name)
				}
			}
		}
	}
}

func checkBudgetsAndScaling(t *testing.T, m manifest) {
	t.Helper()
	for _, w := range m.workloads() {
		found := false
		for _, p := range m.pdbs {
			found = found || (p.Namespace == w.namespace && subset(p.Spec.Selector.MatchLabels, w.template.Labels))
		}
		if !found {
			t.Errorf("%s %s: no PodDisruptionBudget", w.kind, w.name)
		}
	}
	for _, p := range m.pdbs {
		exactlyOne(t, "PodDisruptionBudget "+p.Name, m.workloads(), p.Namespace, p.Spec.Selector.MatchLabels)
	}
	for _, h := range m.hpas {
		ref := h.Spec.ScaleTargetRef
		found := false
		for _, w := range m.workloads() {
			if w.kind == ref.Kind && w.name == ref.Name && w.namespace == h.Namespace {
				found = true
				for _, c := range w.template.Spec.Containers {
					if c.Resources.Requests.Cpu().IsZero() {
						t.Errorf("HPA %s: %s has no cpu request to scale on", h.Name, c.Name)
					}
				}
			}
		}
		if !found {
			t.Errorf("HPA %s: scale target %s %s does not exist", h.Name, ref.Kind, ref.Name)
		}
	}
	if len(m.statefulSets) > 0 && len(m.hpas) == 0 {
		t.Error("data plane without a HorizontalPodAutoscaler")
	}
}

// checkFleet checks what spans overlays: the control plane admits the data planes of every
// region, and no two regions' selectors overlap.
func checkFleet(t *testing.T, all []manifest) {
	var workloads []workload
	for _, m := range all {
		workloads = append(workloads, m.workloads()...)
	}
	for _, m := range all {
		for _, s := range m.services {
			exactlyOne(t, m.overlay+" Service "+s.Name, workloads, s.Namespace, s.Spec.Selector)
		}
		for _, np := range m.policies {
			for _, rule := range np.Spec.Ingress {
				for _, peer := range rule.From {
					if peer.PodSelector == nil || peer.NamespaceSelector != nil {
						continue
					}
					n := 0
					for _, w := range workloads {
						if w.namespace == np.Namespace && subset(peer.PodSelector.MatchLabels, w.template.Labels) {
							n++
						}
					}
					if n == 0 {
						t.Errorf("%s NetworkPolicy %s: admits pods %v, which no workload has", m.overlay, np.Name, peer.PodSelector.MatchLabels)
					}
				}
			}
		}
	}
	// The limits file the control plane mounts is the repository's default.
	a, err1 := os.ReadFile("base/controlplane/limits.default.yaml")
	b, err2 := os.ReadFile("../../configs/limits.default.yaml")
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Errorf("base/controlplane/limits.default.yaml differs from configs/limits.default.yaml (%v, %v)", err1, err2)
	}
}

func exactlyOne(t *testing.T, id string, ws []workload, namespace string, selector map[string]string) *workload {
	t.Helper()
	if len(selector) == 0 {
		t.Errorf("%s: empty selector", id)
		return nil
	}
	var found []workload
	for _, w := range ws {
		if w.namespace == namespace && subset(selector, w.template.Labels) {
			found = append(found, w)
		}
	}
	if len(found) != 1 {
		t.Errorf("%s: selector %v matches %d workloads, want 1", id, selector, len(found))
		return nil
	}
	return &found[0]
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func declaredPort(c corev1.Container, p intstr.IntOrString) bool {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return true
		}
	}
	return false
}

func podPort(pod corev1.PodSpec, p intstr.IntOrString) bool {
	for _, c := range pod.Containers {
		if declaredPort(c, p) {
			return true
		}
	}
	return false
}

// imageBinary returns the binary an image runs: sekgate/dataplane:tag is dataplane.
func imageBinary(image string) string {
	name, _, _ := strings.Cut(image[strings.LastIndex(image, "/")+1:], ":")
	return name
}
