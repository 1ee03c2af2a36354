package main

// The private forward-auth listener on Kubernetes: the ConfigMap's
// forward_auth.listen, the container port, the cluster-internal Service
// usher-auth, the NetworkPolicy that lets only the ingress controller reach
// it, and the URLs of the Kubernetes recipes in docs/integrations agree.

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/usherhq/usher/internal/config"
)

type k8sNetworkPolicy struct {
	PodSelector k8sSelector `yaml:"podSelector"`
	PolicyTypes []string    `yaml:"policyTypes"`
	Ingress     []struct {
		From  []k8sPeer `yaml:"from"`
		Ports []struct {
			Port string `yaml:"port"` // a number or a container port's name
		} `yaml:"ports"`
	} `yaml:"ingress"`
}

type k8sPeer struct {
	PodSelector       *k8sSelector `yaml:"podSelector"`
	NamespaceSelector *k8sSelector `yaml:"namespaceSelector"`
	IPBlock           *struct {
		CIDR string `yaml:"cidr"`
	} `yaml:"ipBlock"`
}

// usherPod is the usher Deployment's pod, its container and the config
// the container runs.
type usherPod struct {
	labels map[string]string
	c      *k8sContainer
	cfg    *config.Config
}

// kubeUsherPod reads the usher Deployment and the config its --config
// names in the ConfigMap (TestDeployKubernetesUsher checks their shape).
func kubeUsherPod(t *testing.T, objs map[string]*k8sObject) usherPod {
	t.Helper()
	d := decodeSpec[k8sDeployment](t, mustObject(t, objs, "Deployment/usher"))
	if len(d.Template.Spec.Containers) != 1 {
		t.Fatalf("usher pod has %d containers, want 1", len(d.Template.Spec.Containers))
	}
	c := &d.Template.Spec.Containers[0]
	if len(c.Args) != 3 {
		t.Fatalf("usher args %q, want serve --config FILE", c.Args)
	}
	cmName := volumeSource(t, d, c, filepath.Dir(c.Args[2]), "configMap")
	body := mustObject(t, objs, "ConfigMap/"+cmName).Data[filepath.Base(c.Args[2])]
	return usherPod{labels: d.Template.Metadata.Labels, c: c, cfg: parseUsherConfig(t, "ConfigMap "+cmName, body)}
}

// TestDeployKubernetesForwardAuth checks that the forward-auth listener the
// config opens is a container port, that only the cluster-internal Service
// usher-auth reaches it, that a NetworkPolicy lets only the ingress
// controller's pods reach it (and still lets visitors and the probes reach
// the public and admin listeners), and that the Kubernetes recipes ask it
// through usher-auth while sending usher's own paths to the public listener.
func TestDeployKubernetesForwardAuth(t *testing.T) {
	t.Parallel()
	objs := kubeManifests(t)
	u := kubeUsherPod(t, objs)
	if u.cfg.ForwardAuth.Listen == "" {
		t.Fatal("the ConfigMap's config sets no forward_auth.listen: the ingress recipes (docs/integrations) have nowhere to ask")
	}
	authPort := listenPort(t, u.cfg.ForwardAuth.Listen)
	publicPort := listenPort(t, u.cfg.Listen)
	adminPort := listenPort(t, u.cfg.Admin.Listen)
	if !slices.ContainsFunc(u.c.Ports, func(p k8sPort) bool { return p.ContainerPort == authPort }) {
		t.Errorf("usher container does not declare port %d of forward_auth.listen %s", authPort, u.cfg.ForwardAuth.Listen)
	}

	// Services: usher-auth, cluster-internal, is the only one to reach it.
	reached := false
	for key, o := range objs {
		if o.Kind != "Service" {
			continue
		}
		s := decodeSpec[k8sService](t, o)
		if !labelsMatch(s.Selector, u.labels) {
			continue
		}
		for _, p := range s.Ports {
			if u.c.containerPort(p.TargetPort) != authPort {
				continue
			}
			switch {
			case o.Metadata.Name != "usher-auth":
				t.Errorf("%s: %s port %d reaches forward_auth.listen: only Service usher-auth may", o.File, key, p.Port)
			case s.Type != "" && s.Type != "ClusterIP":
				t.Errorf("%s: %s is of type %s: forward auth must stay cluster-internal", o.File, key, s.Type)
			default:
				reached = true
			}
		}
	}
	if !reached {
		t.Errorf("no Service usher-auth reaches forward_auth.listen (container port %d)", authPort)
	}

	checkAuthNetworkPolicy(t, objs, u, authPort, publicPort, adminPort)

	for _, f := range []string{"docs/integrations/ingress-nginx.yaml", "docs/integrations/traefik-kubernetes.yaml"} {
		checkRecipeTargets(t, objs, u, f, authPort, publicPort)
	}
}

// checkAuthNetworkPolicy checks that the NetworkPolicies selecting the
// usher pods let only pods chosen by namespace and labels reach authPort,
// and anyone reach publicPort and adminPort.
func checkAuthNetworkPolicy(t *testing.T, objs map[string]*k8sObject, u usherPod, authPort, publicPort, adminPort int) {
	t.Helper()
	policies := 0
	open := map[int]bool{}
	for key, o := range objs {
		if o.Kind != "NetworkPolicy" {
			continue
		}
		np := decodeSpec[k8sNetworkPolicy](t, o)
		if !labelsMatch(np.PodSelector.MatchLabels, u.labels) || !slices.Contains(np.PolicyTypes, "Ingress") {
			continue
		}
		policies++
		for i, rule := range np.Ingress {
			var ports []int // nil: every port
			for _, p := range rule.Ports {
				n := u.c.containerPort(p.Port)
				if n == 0 {
					t.Errorf("%s: %s ingress[%d]: port %q is no port of the usher container", o.File, key, i, p.Port)
				}
				ports = append(ports, n)
			}
			covers := func(port int) bool { return ports == nil || slices.Contains(ports, port) }
			if len(rule.From) == 0 {
				for _, port := range []int{publicPort, adminPort} {
					if covers(port) {
						open[port] = true
					}
				}
			}
			if !covers(authPort) {
				continue
			}
			if len(rule.From) == 0 {
				t.Errorf("%s: %s ingress[%d] lets anyone reach forward_auth.listen (port %d)", o.File, key, i, authPort)
			}
			for j, peer := range rule.From {
				if msg := peerProblem(peer); msg != "" {
					t.Errorf("%s: %s ingress[%d].from[%d] %s: every peer of forward_auth.listen is trusted", o.File, key, i, j, msg)
				}
			}
		}
	}
	if policies == 0 {
		t.Fatal("no NetworkPolicy selects the usher pods: any pod of the cluster can reach forward_auth.listen and describe any request")
	}
	for _, port := range []int{publicPort, adminPort} {
		if !open[port] {
			t.Errorf("the NetworkPolicies do not let every peer reach container port %d: the site or the probes would be cut off", port)
		}
	}
}

// peerProblem says what is wrong with a peer allowed to reach forward
// auth, or "" when it names pods by namespace and labels.
func peerProblem(p k8sPeer) string {
	switch {
	case p.IPBlock != nil:
		return fmt.Sprintf("allows the addresses %s", p.IPBlock.CIDR)
	case p.NamespaceSelector == nil || len(p.NamespaceSelector.MatchLabels) == 0:
		return "allows pods of any namespace"
	case p.PodSelector == nil || len(p.PodSelector.MatchLabels) == 0:
		return "allows every pod of its namespaces"
	}
	return ""
}

// clusterURL matches an address of a Service by its cluster DNS name.
var clusterURL = regexp.MustCompile(`http://([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local(?::([0-9]+))?`)

// checkRecipeTargets checks a Kubernetes recipe of docs/integrations: every
// URL of a usher Service (the questions and the pages the proxy fetches)
// reaches forward_auth.listen; every backend in usher's namespace (usher's
// own paths, routed to usher) reaches the public listener.
func checkRecipeTargets(t *testing.T, objs map[string]*k8sObject, u usherPod, file string, authPort, publicPort int) {
	t.Helper()
	const ns = "usher"
	data := readRepoFile(t, file)
	urls := 0
	for _, m := range clusterURL.FindAllStringSubmatch(string(data), -1) {
		if m[2] != ns {
			continue
		}
		urls++
		port := 80
		if m[3] != "" {
			port, _ = strconv.Atoi(m[3])
		}
		if got := serviceTarget(t, objs, u, m[1], port); got != authPort {
			t.Errorf("%s: %s reaches container port %d, want %d (forward_auth.listen %s)", file, m[0], got, authPort, u.cfg.ForwardAuth.Listen)
		}
	}
	if urls == 0 {
		t.Errorf("%s names no Service of namespace %s to ask", file, ns)
	}
	backends := 0
	for _, doc := range yamlDocuments(t, file, data) {
		var docNS string
		if meta, ok := mapAt(doc, "metadata"); ok {
			docNS, _ = meta["namespace"].(string)
		}
		walkMaps(doc, func(m map[string]any) {
			name, _ := m["name"].(string)
			port, ok := backendPort(m["port"])
			if name == "" || !ok {
				return
			}
			in, ok := m["namespace"].(string)
			if !ok {
				in = docNS
			}
			if in != ns {
				return
			}
			backends++
			if got := serviceTarget(t, objs, u, name, port); got != publicPort {
				t.Errorf("%s: the backend Service %s port %d reaches container port %d, want the public listener's %d", file, name, port, got, publicPort)
			}
		})
	}
	if backends == 0 {
		t.Errorf("%s routes nothing to usher's namespace: usher's own paths (/__usher/) must reach the public listener", file)
	}
}

// serviceTarget returns the usher container port that Service name's port
// reaches; 0 when there is no such Service or port.
func serviceTarget(t *testing.T, objs map[string]*k8sObject, u usherPod, name string, port int) int {
	t.Helper()
	o, ok := objs["Service/"+name]
	if !ok {
		return 0
	}
	s := decodeSpec[k8sService](t, o)
	if !labelsMatch(s.Selector, u.labels) {
		return 0
	}
	for _, p := range s.Ports {
		if p.Port == port {
			return u.c.containerPort(p.TargetPort)
		}
	}
	return 0
}

// backendPort reads a backend's port: a number (Traefik) or a mapping
// with a number (an Ingress backend).
func backendPort(v any) (int, bool) {
	switch p := v.(type) {
	case int:
		return p, true
	case map[string]any:
		n, ok := p["number"].(int)
		return n, ok
	}
	return 0, false
}

// mapAt returns the mapping under key of a decoded YAML mapping.
func mapAt(v any, key string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	sub, ok := m[key].(map[string]any)
	return sub, ok
}

// walkMaps calls f on every mapping of a decoded YAML value.
func walkMaps(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, e := range x {
			walkMaps(e, f)
		}
	case []any:
		for _, e := range x {
			walkMaps(e, f)
		}
	}
}
