package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The Kubernetes manifests, decoded into the fields the checks read.

type k8sObject struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   k8sMeta           `yaml:"metadata"`
	Spec       yaml.Node         `yaml:"spec"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	File       string            `yaml:"-"`
}

type k8sMeta struct {
	Name      string            `yaml:"name"`
	Namespace string            `yaml:"namespace"`
	Labels    map[string]string `yaml:"labels"`
}

type k8sSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type k8sDeployment struct {
	Replicas int         `yaml:"replicas"`
	Selector k8sSelector `yaml:"selector"`
	Template struct {
		Metadata k8sMeta `yaml:"metadata"`
		Spec     k8sPod  `yaml:"spec"`
	} `yaml:"template"`
}

type k8sPod struct {
	SecurityContext struct {
		RunAsNonRoot   *bool  `yaml:"runAsNonRoot"`
		RunAsUser      *int64 `yaml:"runAsUser"`
		FSGroup        *int64 `yaml:"fsGroup"`
		SeccompProfile struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	Containers []k8sContainer `yaml:"containers"`
	Volumes    []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		Secret *struct {
			SecretName string `yaml:"secretName"`
		} `yaml:"secret"`
		EmptyDir any `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type k8sContainer struct {
	Name           string    `yaml:"name"`
	Image          string    `yaml:"image"`
	Args           []string  `yaml:"args"`
	Ports          []k8sPort `yaml:"ports"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"` // a number or a container port's name
	} `yaml:"httpGet"`
	TCPSocket *struct {
		Port string `yaml:"port"`
	} `yaml:"tcpSocket"`
	Exec *struct {
		Command []string `yaml:"command"`
	} `yaml:"exec"`
}

type k8sService struct {
	Type     string            `yaml:"type"`
	Selector map[string]string `yaml:"selector"`
	Ports    []struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort string `yaml:"targetPort"`
	} `yaml:"ports"`
}

type k8sPDB struct {
	MaxUnavailable string      `yaml:"maxUnavailable"`
	MinAvailable   string      `yaml:"minAvailable"`
	Selector       k8sSelector `yaml:"selector"`
}

// containerPort resolves a probe's or Service's port (a number or a port
// name) against a container; 0 when it names no port of the container.
func (c *k8sContainer) containerPort(port string) int {
	if n, err := strconv.Atoi(port); err == nil {
		return n
	}
	for _, p := range c.Ports {
		if p.Name == port {
			return p.ContainerPort
		}
	}
	return 0
}

// kubeManifests reads deploy/kubernetes: every object of every file but
// kustomization.yaml, keyed by kind and name.
func kubeManifests(t *testing.T) map[string]*k8sObject {
	t.Helper()
	dir := filepath.Join(repoRoot, "deploy", "kubernetes")
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests in %s (%v)", dir, err)
	}
	objs := map[string]*k8sObject{}
	for _, path := range paths {
		if filepath.Base(path) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for i := 1; ; i++ {
			o := &k8sObject{File: filepath.Base(path)}
			err := dec.Decode(o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", path, i, err)
			}
			key := o.Kind + "/" + o.Metadata.Name
			if _, dup := objs[key]; dup {
				t.Errorf("%s: %s defined twice", o.File, key)
			}
			objs[key] = o
		}
	}
	return objs
}

// decodeSpec decodes an object's spec into dst.
func decodeSpec[T any](t *testing.T, o *k8sObject) *T {
	t.Helper()
	var dst T
	if err := o.Spec.Decode(&dst); err != nil {
		t.Fatalf("%s: %s/%s spec: %v", o.File, o.Kind, o.Metadata.Name, err)
	}
	return &dst
}

func mustObject(t *testing.T, objs map[string]*k8sObject, key string) *k8sObject {
	t.Helper()
	o, ok := objs[key]
	if !ok {
		t.Fatalf("deploy/kubernetes has no %s", key)
	}
	return o
}

// wantAPIVersion is the API version of each kind the manifests use.
var wantAPIVersion = map[string]string{
	"Namespace":           "v1",
	"ConfigMap":           "v1",
	"Secret":              "v1",
	"Service":             "v1",
	"Deployment":          "apps/v1",
	"PodDisruptionBudget": "policy/v1",
	"NetworkPolicy":       "networking.k8s.io/v1",
}

func TestDeployKubernetesObjects(t *testing.T) {
	t.Parallel()
	objs := kubeManifests(t)
	files := map[string]bool{}
	for key, o := range objs {
		files[o.File] = true
		if o.Metadata.Name == "" {
			t.Errorf("%s: an object of kind %q has no metadata.name", o.File, o.Kind)
		}
		want, ok := wantAPIVersion[o.Kind]
		switch {
		case !ok:
			t.Errorf("%s: %s: kind %q is not one the manifests are checked for", o.File, key, o.Kind)
		case o.APIVersion != want:
			t.Errorf("%s: %s: apiVersion %q, want %q", o.File, key, o.APIVersion, want)
		}
		if o.Kind != "Namespace" && o.Kind != "Secret" && o.Metadata.Namespace != "" {
			t.Errorf("%s: %s sets namespace %q: kustomization.yaml sets it", o.File, key, o.Metadata.Namespace)
		}
	}

	// kustomization.yaml lists every manifest but the Secret's example,
	// which must never overwrite a real Secret.
	var k struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Namespace  string   `yaml:"namespace"`
		Resources  []string `yaml:"resources"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "deploy/kubernetes/kustomization.yaml"), &k); err != nil {
		t.Fatal(err)
	}
	if k.Kind != "Kustomization" || k.APIVersion != "kustomize.config.k8s.io/v1beta1" {
		t.Errorf("kustomization.yaml: kind %q apiVersion %q", k.Kind, k.APIVersion)
	}
	ns := mustObject(t, objs, "Namespace/"+k.Namespace)
	if ns.Metadata.Name != "usher" {
		t.Errorf("namespace %q, want usher", ns.Metadata.Name)
	}
	secret := mustObject(t, objs, "Secret/usher-secrets")
	if slices.Contains(k.Resources, secret.File) {
		t.Errorf("kustomization.yaml lists %s: applying the folder would overwrite the real Secret", secret.File)
	}
	if secret.Metadata.Namespace != k.Namespace {
		t.Errorf("%s: namespace %q, want %q (it is applied on its own)", secret.File, secret.Metadata.Namespace, k.Namespace)
	}
	for file := range files {
		if file != secret.File && !slices.Contains(k.Resources, file) {
			t.Errorf("kustomization.yaml does not list %s", file)
		}
	}
	for _, r := range k.Resources {
		if !files[r] {
			t.Errorf("kustomization.yaml lists %s, which holds no object", r)
		}
	}
}

// TestDeployKubernetesUsher cross-checks the usher Deployment against the
// usher config in its ConfigMap, the Secret, the Services, Redis and the
// PodDisruptionBudget.
func TestDeployKubernetesUsher(t *testing.T) {
	t.Parallel()
	objs := kubeManifests(t)
	dep := mustObject(t, objs, "Deployment/usher")
	d := decodeSpec[k8sDeployment](t, dep)
	if d.Replicas != 3 {
		t.Errorf("usher replicas %d, want 3", d.Replicas)
	}
	pod := d.Template.Metadata.Labels
	if len(d.Selector.MatchLabels) == 0 || !labelsMatch(d.Selector.MatchLabels, pod) {
		t.Fatalf("usher selector %v does not select its pods %v", d.Selector.MatchLabels, pod)
	}
	if len(d.Template.Spec.Containers) != 1 {
		t.Fatalf("usher pod has %d containers, want 1", len(d.Template.Spec.Containers))
	}
	c := &d.Template.Spec.Containers[0]

	// The config: --config names the ConfigMap's key in its mount.
	if len(c.Args) != 3 || c.Args[0] != "serve" || c.Args[1] != "--config" {
		t.Fatalf("usher args %q, want serve --config FILE", c.Args)
	}
	cmName := volumeSource(t, d, c, filepath.Dir(c.Args[2]), "configMap")
	cm := mustObject(t, objs, "ConfigMap/"+cmName)
	body, ok := cm.Data[filepath.Base(c.Args[2])]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %q for --config %s", cmName, filepath.Base(c.Args[2]), c.Args[2])
	}
	cfg := parseUsherConfig(t, "ConfigMap "+cmName, body)

	// Probes: the admin listener's /healthz, which needs no token.
	if cfg.Admin.Listen == "" {
		t.Fatal("the ConfigMap's config has no admin listener for the probes")
	}
	adminPort := listenPort(t, cfg.Admin.Listen)
	for name, p := range map[string]*k8sProbe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
		switch {
		case p == nil || p.HTTPGet == nil:
			t.Errorf("usher has no %s.httpGet", name)
		case p.HTTPGet.Path != "/healthz":
			t.Errorf("usher %s path %q, want /healthz", name, p.HTTPGet.Path)
		case c.containerPort(p.HTTPGet.Port) != adminPort:
			t.Errorf("usher %s port %q is container port %d; admin.listen is %s", name, p.HTTPGet.Port, c.containerPort(p.HTTPGet.Port), cfg.Admin.Listen)
		}
	}
	publicPort := listenPort(t, cfg.Listen)
	for _, port := range []int{publicPort, adminPort} {
		if !slices.ContainsFunc(c.Ports, func(p k8sPort) bool { return p.ContainerPort == port }) {
			t.Errorf("usher container does not declare port %d of its config", port)
		}
	}

	// Secrets: token_file and secret_file are keys of the Secret, in its
	// mount.
	secret := mustObject(t, objs, "Secret/usher-secrets")
	files := []string{cfg.Admin.TokenFile}
	for _, key := range cfg.Keys {
		files = append(files, key.SecretFile)
	}
	if len(cfg.Keys) == 0 {
		t.Error("the config has no keys: each node would use a ring kept in Redis, lost with Redis's data")
	}
	for _, f := range files {
		if f == "" {
			t.Error("the config holds a secret itself; it should read it from the Secret (token_file, secret_file)")
			continue
		}
		if name := volumeSource(t, d, c, filepath.Dir(f), "secret"); name != secret.Metadata.Name {
			t.Errorf("%s is in Secret %q, want %q", f, name, secret.Metadata.Name)
		}
		if _, ok := secret.StringData[filepath.Base(f)]; !ok {
			t.Errorf("%s: the Secret %s has no key %q", f, secret.Metadata.Name, filepath.Base(f))
		}
	}

	// Redis: the config's address is the Redis Service's.
	if cfg.Store.Redis == nil || len(cfg.Store.Redis.Addrs) != 1 {
		t.Fatalf("the config's store is not one Redis: %+v", cfg.Store)
	}
	host, port, _ := net.SplitHostPort(cfg.Store.Redis.Addrs[0])
	redisSvc := decodeSpec[k8sService](t, mustObject(t, objs, "Service/"+host))
	redisDep := decodeSpec[k8sDeployment](t, mustObject(t, objs, "Deployment/"+host))
	if !labelsMatch(redisSvc.Selector, redisDep.Template.Metadata.Labels) {
		t.Errorf("Service %s selects %v, not the Redis pods %v", host, redisSvc.Selector, redisDep.Template.Metadata.Labels)
	}
	if len(redisSvc.Ports) != 1 || strconv.Itoa(redisSvc.Ports[0].Port) != port ||
		redisDep.Template.Spec.Containers[0].containerPort(redisSvc.Ports[0].TargetPort) != 6379 {
		t.Errorf("Service %s ports %+v do not reach Redis on 6379 from %s", host, redisSvc.Ports, cfg.Store.Redis.Addrs[0])
	}
	args := strings.Join(redisDep.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--save  --appendonly no") {
		t.Errorf("Redis args %q: the manifests document running without persistence (--save '' --appendonly no)", args)
	}

	// Services: the public and the admin one reach usher's listeners.
	for svc, want := range map[string]int{"usher": publicPort, "usher-admin": adminPort} {
		s := decodeSpec[k8sService](t, mustObject(t, objs, "Service/"+svc))
		if !labelsMatch(s.Selector, pod) {
			t.Errorf("Service %s selects %v, not the usher pods %v", svc, s.Selector, pod)
		}
		if len(s.Ports) != 1 || c.containerPort(s.Ports[0].TargetPort) != want {
			t.Errorf("Service %s ports %+v do not reach container port %d", svc, s.Ports, want)
		}
	}

	pdb := decodeSpec[k8sPDB](t, mustObject(t, objs, "PodDisruptionBudget/usher"))
	if !labelsMatch(pdb.Selector.MatchLabels, pod) || len(pdb.Selector.MatchLabels) == 0 {
		t.Errorf("PodDisruptionBudget selects %v, not the usher pods %v", pdb.Selector.MatchLabels, pod)
	}
	if pdb.MaxUnavailable == "" && pdb.MinAvailable == "" {
		t.Error("PodDisruptionBudget sets neither maxUnavailable nor minAvailable")
	}
}

// TestDeployKubernetesSecurity checks that every container runs as a
// non-root user, on a read-only root, with no capabilities and with
// resources set (the namespace enforces the restricted Pod Security
// Standard).
func TestDeployKubernetesSecurity(t *testing.T) {
	t.Parallel()
	objs := kubeManifests(t)
	n := 0
	for key, o := range objs {
		if o.Kind != "Deployment" {
			continue
		}
		d := decodeSpec[k8sDeployment](t, o)
		pod := d.Template.Spec
		if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: runAsNonRoot is not true", key)
		}
		if u := pod.SecurityContext.RunAsUser; u == nil || *u == 0 {
			t.Errorf("%s: runAsUser is not a non-root uid", key)
		}
		if pod.SecurityContext.SeccompProfile.Type != "RuntimeDefault" {
			t.Errorf("%s: seccompProfile %q, want RuntimeDefault", key, pod.SecurityContext.SeccompProfile.Type)
		}
		for _, c := range pod.Containers {
			n++
			sc := c.SecurityContext
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s: container %s: readOnlyRootFilesystem is not true", key, c.Name)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: container %s: allowPrivilegeEscalation is not false", key, c.Name)
			}
			if !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
				t.Errorf("%s: container %s: capabilities.drop %q, want [ALL]", key, c.Name, sc.Capabilities.Drop)
			}
			if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
				t.Errorf("%s: container %s: resources %+v lack cpu and memory requests or a memory limit", key, c.Name, c.Resources)
			}
			if c.ReadinessProbe == nil || c.LivenessProbe == nil {
				t.Errorf("%s: container %s lacks a readiness or liveness probe", key, c.Name)
			}
		}
	}
	if n < 2 {
		t.Errorf("checked %d containers, want usher's and Redis's", n)
	}
}

// volumeSource returns the name of the configMap or secret (kind) mounted
// in container c at mountPath, failing the test when there is none.
func volumeSource(t *testing.T, d *k8sDeployment, c *k8sContainer, mountPath, kind string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath != mountPath {
			continue
		}
		for _, v := range d.Template.Spec.Volumes {
			switch {
			case v.Name != m.Name:
			case kind == "configMap" && v.ConfigMap != nil:
				return v.ConfigMap.Name
			case kind == "secret" && v.Secret != nil:
				return v.Secret.SecretName
			}
		}
	}
	t.Fatalf("container %s mounts no %s at %s", c.Name, kind, mountPath)
	return ""
}

// labelsMatch reports whether every label of selector is in labels.
func labelsMatch(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// TestDeployKustomizeBuilds renders deploy/kubernetes with kubectl's
// kustomize when kubectl is installed (it is not a Debian package, so
// usher's deps do not install it).
func TestDeployKustomizeBuilds(t *testing.T) {
	t.Parallel()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed: kustomization.yaml was not rendered (its resources are checked by TestDeployKubernetesObjects)")
	}
	out, err := exec.CommandContext(t.Context(), kubectl, "kustomize", filepath.Join(repoRoot, "deploy", "kubernetes")).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	docs := yamlDocuments(t, "kubectl kustomize output", out)
	if len(docs) < 8 {
		t.Errorf("kubectl kustomize rendered %d objects, want at least 8", len(docs))
	}
	if !bytes.Contains(out, []byte("namespace: usher")) {
		t.Error("kubectl kustomize output puts nothing in namespace usher")
	}
}
