package main

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// dockerInstruction is one instruction of a Dockerfile, its continuation
// lines joined.
type dockerInstruction struct {
	Line int    // where it starts
	Cmd  string // upper case: FROM, RUN, ...
	Args string
}

// parseDockerfile splits a Dockerfile into instructions: comments and blank
// lines are dropped, lines ending in a backslash are joined to the next.
func parseDockerfile(data string) []dockerInstruction {
	var out []dockerInstruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(data, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if body, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, dockerInstruction{Line: start, Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// dockerStages splits instructions at each FROM.
func dockerStages(ins []dockerInstruction) [][]dockerInstruction {
	var stages [][]dockerInstruction
	for _, in := range ins {
		if in.Cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) > 0 {
			stages[len(stages)-1] = append(stages[len(stages)-1], in)
		}
	}
	return stages
}

// instructions returns a stage's instructions of one kind.
func instructions(stage []dockerInstruction, cmd string) []dockerInstruction {
	var out []dockerInstruction
	for _, in := range stage {
		if in.Cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// jsonArgs decodes the exec form ["a", "b"] of CMD, ENTRYPOINT and
// HEALTHCHECK CMD.
func jsonArgs(t *testing.T, in dockerInstruction, s string) []string {
	t.Helper()
	var args []string
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		t.Fatalf("Dockerfile line %d: %s is not in exec form [\"...\"]: %v", in.Line, in.Cmd, err)
	}
	return args
}

// flagValue returns the value after name in args, or def.
func flagValue(args []string, name, def string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return def
}

// TestDeployDockerfile checks the image's final stage against the sample
// config it ships: a non-root user, the health check on the admin port, the
// ports and the store's volume.
func TestDeployDockerfile(t *testing.T) {
	t.Parallel()
	stages := dockerStages(parseDockerfile(string(readRepoFile(t, "Dockerfile"))))
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a builder and a final one", len(stages))
	}
	final := stages[len(stages)-1]
	base := strings.Fields(final[0].Args)[0]
	if !strings.HasPrefix(base, "gcr.io/distroless/static") && base != "scratch" {
		t.Errorf("final stage is FROM %s, want distroless/static or scratch", base)
	}

	users := instructions(final, "USER")
	if len(users) == 0 {
		t.Fatal("final stage has no USER: the container would run as root")
	}
	user := users[len(users)-1].Args
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("final USER %q: want a numeric non-root uid (Kubernetes runAsNonRoot cannot check a name)", user)
	}

	// The sample config is copied where the command reads it.
	var entry, cmd []string
	for _, in := range instructions(final, "ENTRYPOINT") {
		entry = jsonArgs(t, in, in.Args)
	}
	for _, in := range instructions(final, "CMD") {
		cmd = jsonArgs(t, in, in.Args)
	}
	run := append(slices.Clone(entry), cmd...)
	if len(run) < 2 || run[0] != "/usher" || run[1] != "serve" {
		t.Fatalf("the image runs %q, want /usher serve", run)
	}
	configPath := flagValue(run, "--config", "usher.yaml")
	copied := false
	for _, in := range instructions(final, "COPY") {
		f := strings.Fields(in.Args)
		if len(f) == 2 && f[0] == "deploy/docker/usher.yaml" && f[1] == configPath {
			copied = true
		}
	}
	if !copied {
		t.Errorf("final stage does not COPY deploy/docker/usher.yaml to %s, the --config of %q", configPath, run)
	}
	cfg := parseUsherConfig(t, "deploy/docker/usher.yaml", string(readRepoFile(t, "deploy/docker/usher.yaml")))

	hcs := instructions(final, "HEALTHCHECK")
	if len(hcs) != 1 {
		t.Fatalf("final stage has %d HEALTHCHECK, want 1", len(hcs))
	}
	_, hcCmd, ok := strings.Cut(hcs[0].Args, "CMD ")
	if !ok {
		t.Fatalf("HEALTHCHECK %q has no CMD", hcs[0].Args)
	}
	hc := jsonArgs(t, hcs[0], hcCmd)
	if len(hc) < 2 || hc[0] != "/usher" || hc[1] != "health" {
		t.Fatalf("HEALTHCHECK runs %q, want /usher health", hc)
	}
	hcURL := flagValue(hc, "--url", defaultHealthURL)
	wantURL := "http://127.0.0.1:" + strconv.Itoa(listenPort(t, cfg.Admin.Listen)) + "/healthz"
	if cfg.Admin.Listen == "" || hcURL != wantURL {
		t.Errorf("HEALTHCHECK asks %s; the config's admin.listen %q answers %s", hcURL, cfg.Admin.Listen, wantURL)
	}

	var exposed []string
	for _, in := range instructions(final, "EXPOSE") {
		exposed = append(exposed, strings.Fields(in.Args)...)
	}
	for _, addr := range []string{cfg.Listen, cfg.Admin.Listen} {
		if p := strconv.Itoa(listenPort(t, addr)); !slices.Contains(exposed, p) {
			t.Errorf("EXPOSE %q lacks port %s of listener %s", exposed, p, addr)
		}
		if host, _, _ := net.SplitHostPort(addr); host != "0.0.0.0" && host != "" {
			t.Errorf("listener %s is not reachable from outside the container", addr)
		}
	}

	var volumes []string
	for _, in := range instructions(final, "VOLUME") {
		if strings.HasPrefix(in.Args, "[") {
			volumes = append(volumes, jsonArgs(t, in, in.Args)...)
		} else {
			volumes = append(volumes, strings.Fields(in.Args)...)
		}
	}
	if cfg.Store.Redis != nil || !slices.Contains(volumes, cfg.Store.Embedded.Path) {
		t.Errorf("VOLUME %q does not hold the embedded store's path %q", volumes, cfg.Store.Embedded.Path)
	}
	chowned := false
	for _, in := range instructions(final, "COPY") {
		f := strings.Fields(in.Args)
		if slices.Contains(f, "--chown="+user) && f[len(f)-1] == cfg.Store.Embedded.Path {
			chowned = true
		}
	}
	if !chowned {
		t.Errorf("the image does not create %s owned by %s: the store could not write there", cfg.Store.Embedded.Path, user)
	}

	// The builder's Go is the one go.mod asks for.
	goMod := string(readRepoFile(t, "go.mod"))
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(goMod)
	argLine := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\S+)$`).FindStringSubmatch(string(readRepoFile(t, "Dockerfile")))
	if goLine == nil || argLine == nil || argLine[1] != goLine[1] {
		t.Errorf("Dockerfile's GO_VERSION %v does not match go.mod's go %v", argLine, goLine)
	}
}

// TestDeployDockerConfigChecks runs `usher check` on the container's sample
// config with an admin token beside it, as the container would read it.
func TestDeployDockerConfigChecks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "usher.yaml")
	if err := os.WriteFile(path, readRepoFile(t, "deploy/docker/usher.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := parseUsherConfig(t, "deploy/docker/usher.yaml", string(readRepoFile(t, "deploy/docker/usher.yaml")))
	if filepath.IsAbs(cfg.Admin.TokenFile) || cfg.Admin.TokenFile == "" {
		t.Fatalf("token_file %q: want a path relative to the config (it is mounted beside it)", cfg.Admin.TokenFile)
	}
	if err := os.WriteFile(filepath.Join(dir, cfg.Admin.TokenFile), []byte("a-long-random-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runMain(t, "check", "--config", path)
	if code != 0 || !strings.Contains(out, "is valid") {
		t.Fatalf("usher check on the container's config: exit %d\n%s%s", code, out, errs)
	}
}

// TestDeployDockerignore checks that the build context keeps what the
// build needs and leaves out the repository's history.
func TestDeployDockerignore(t *testing.T) {
	t.Parallel()
	var patterns []string
	for _, line := range strings.Split(string(readRepoFile(t, ".dockerignore")), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	excluded := func(path string) bool {
		out := false
		for _, p := range patterns {
			neg := strings.HasPrefix(p, "!")
			p = filepath.Clean(strings.TrimPrefix(p, "!"))
			// A pattern that matches a directory excludes what is in it.
			for dir := path; dir != "."; dir = filepath.Dir(dir) {
				if ok, _ := filepath.Match(p, dir); ok {
					out = !neg
					break
				}
			}
		}
		return out
	}
	if !excluded(".git") {
		t.Error(".dockerignore does not leave out .git")
	}
	need := []string{"go.mod", "go.sum", "deploy/docker/usher.yaml"}
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		top := strings.Split(rel, string(filepath.Separator))[0]
		if d.IsDir() {
			if top == ".git" || top == "dist" || top == "bin" {
				return filepath.SkipDir
			}
			return nil
		}
		// Go files and whatever internal/ embeds.
		if top == "internal" || top == "cmd" || (rel == top && strings.HasSuffix(rel, ".go")) {
			if !strings.HasSuffix(rel, "_test.go") && !strings.Contains(rel, "testdata") {
				need = append(need, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(need) < 20 {
		t.Fatalf("found %d files the build needs; the walk went wrong", len(need))
	}
	for _, p := range need {
		if excluded(p) {
			t.Errorf(".dockerignore leaves out %s, which the image's build needs", p)
		}
	}
}

// dockerBuildCommand returns the environment and arguments of the
// Dockerfile's go build, with its build arguments replaced by vars and
// its output by out.
func dockerBuildCommand(t *testing.T, vars map[string]string, out string) (env, args []string) {
	t.Helper()
	var run string
	for _, in := range parseDockerfile(string(readRepoFile(t, "Dockerfile"))) {
		if in.Cmd == "RUN" && strings.Contains(in.Args, "go build") {
			run = in.Args
		}
	}
	if run == "" {
		t.Fatal("Dockerfile has no RUN ... go build")
	}
	run, _, _ = strings.Cut(run, "&&")
	run = os.Expand(run, func(name string) string {
		v, ok := vars[name]
		if !ok {
			t.Fatalf("Dockerfile's go build uses ${%s}, which the test does not set", name)
		}
		return v
	})
	words := shellWords(run)
	i := slices.Index(words, "go")
	if i < 0 || i+1 >= len(words) || words[i+1] != "build" {
		t.Fatalf("cannot find go build in %q", words)
	}
	for _, w := range words[:i] {
		if strings.Contains(w, "=") && !strings.HasPrefix(w, "--") {
			env = append(env, w)
		}
	}
	args = words[i+1:]
	if o := slices.Index(args, "-o"); o >= 0 && o+1 < len(args) {
		args[o+1] = out
	}
	return env, args
}

// shellWords splits s at spaces outside double quotes, dropping the quotes.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestDeployStaticBinary builds usher with the Dockerfile's own go build
// command (its flags, its environment) and checks that the binary is
// static, so that it runs on distroless/static or scratch, and that
// `usher version` prints the values stamped in.
func TestDeployStaticBinary(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "usher")
	vars := map[string]string{
		"TARGETOS":   runtime.GOOS,
		"TARGETARCH": runtime.GOARCH,
		"VERSION":    "v9.8.7-test",
		"COMMIT":     "0123456789abcdef0123456789abcdef01234567",
		"DATE":       "2026-11-23T10:00:00Z",
	}
	env, args := dockerBuildCommand(t, vars, out)
	if !slices.Contains(env, "CGO_ENABLED=0") || !slices.Contains(args, "-trimpath") {
		t.Errorf("Dockerfile builds with env %q args %q: want CGO_ENABLED=0 and -trimpath", env, args)
	}
	build := exec.CommandContext(t.Context(), "go", args...)
	build.Dir = repoRoot
	build.Env = append(os.Environ(), env...)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}

	if runtime.GOOS == "linux" {
		f, err := elf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("the binary has a %v program header: it is dynamically linked", p.Type)
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("the binary needs shared libraries %q", libs)
		}
	}
	bi, err := buildinfo.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("build settings CGO_ENABLED=%q -trimpath=%q, want 0 and true", settings["CGO_ENABLED"], settings["-trimpath"])
	}

	got, err := exec.CommandContext(t.Context(), out, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("usher version: %v\n%s", err, got)
	}
	want := "usher v9.8.7-test (commit 0123456789ab, built 2026-11-23T10:00:00Z, " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	if string(got) != want {
		t.Errorf("usher version printed\n %q, want\n %q", got, want)
	}
}

// TestDeployReleaseStampsAsDocker checks that make release stamps the same
// variables, with the same build flags, as the Dockerfile (the release
// itself takes minutes: docs/deploy.md says how it was run).
func TestDeployReleaseStampsAsDocker(t *testing.T) {
	t.Parallel()
	makefile := string(readRepoFile(t, "Makefile"))
	_, release, ok := strings.Cut(makefile, "\nrelease:")
	if !ok {
		t.Fatal("Makefile has no release target")
	}
	ldflags := regexp.MustCompile(`(?m)^RELEASE_LDFLAGS = (.*)$`).FindStringSubmatch(makefile)
	if ldflags == nil {
		t.Fatal("Makefile has no RELEASE_LDFLAGS")
	}
	xVars := regexp.MustCompile(`-X (main\.\w+)=`)
	names := func(s string) []string {
		var out []string
		for _, m := range xVars.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	_, dockerArgs := dockerBuildCommand(t, map[string]string{"TARGETOS": "", "TARGETARCH": "", "VERSION": "", "COMMIT": "", "DATE": ""}, "x")
	docker := names(flagValue(dockerArgs, "-ldflags", ""))
	if want := []string{"main.Commit", "main.Date", "main.Version"}; !slices.Equal(docker, want) {
		t.Errorf("Dockerfile stamps %q, want %q", docker, want)
	}
	if got := names(ldflags[1]); !slices.Equal(got, docker) {
		t.Errorf("make release stamps %q, the Dockerfile %q", got, docker)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "$(RELEASE_LDFLAGS)"`, "SHA256SUMS", ".tar.gz"} {
		if !strings.Contains(release, want) {
			t.Errorf("make release lacks %q", want)
		}
	}
	platforms := regexp.MustCompile(`(?m)^PLATFORMS \?= (.*)$`).FindStringSubmatch(makefile)
	if platforms == nil {
		t.Fatal("Makefile has no PLATFORMS")
	}
	if got, want := strings.Fields(platforms[1]), []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}; !slices.Equal(got, want) {
		t.Errorf("PLATFORMS %q, want %q", got, want)
	}
}

// TestDeployDockerConfigServes serves the container's sample config (its
// listeners moved to free loopback ports, its store to a temporary
// directory) and runs the image's health check against it: usher health
// succeeds, and /healthz reports the version usher version prints.
func TestDeployDockerConfigServes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := string(readRepoFile(t, "deploy/docker/usher.yaml"))
	for _, r := range [][2]string{
		{"listen: 0.0.0.0:8080", "listen: 127.0.0.1:0"},
		{"listen: 0.0.0.0:9090", "listen: 127.0.0.1:0"},
		{"path: /data", "path: " + filepath.Join(dir, "data")},
	} {
		if strings.Count(body, r[0]) != 1 {
			t.Fatalf("deploy/docker/usher.yaml has %q %d times, want once", r[0], strings.Count(body, r[0]))
		}
		body = strings.Replace(body, r[0], r[1], 1)
	}
	path := filepath.Join(dir, "usher.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "admin.token"), []byte("a-long-random-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, adm, stop := startMain(t, "serve", "--config", path)
	healthz := "http://" + adm + "/healthz"
	code, out, errs := runMain(t, "health", "--url", healthz)
	if code != 0 || !strings.Contains(out, "200 OK") {
		t.Errorf("usher health --url %s: exit %d\n%s%s", healthz, code, out, errs)
	}
	resp, err := http.Get(healthz)
	if err != nil {
		t.Fatal(err)
	}
	var h struct{ Status, Version string }
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if err != nil || h.Status != "ok" || h.Version != buildVersion().Version {
		t.Errorf("GET /healthz = %+v (%v), want status ok and version %q", h, err, buildVersion().Version)
	}
	if code := stop(); code != 0 {
		t.Errorf("serve exited %d after the signal", code)
	}
}
