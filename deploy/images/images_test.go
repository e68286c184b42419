// Package images holds the Containerfiles of the gateway's images and the test that builds
// them with deploy/images/build.sh and inspects the result without starting a container.
package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var names = []string{"dataplane", "controlplane", "gatewayctl"}

const nonRoot = "65532:65532"

// TestContainerfiles checks what every image must say: an empty base, the CA bundle, the
// non-root user, the binary as the exec-form entrypoint and the OCI version labels.
func TestContainerfiles(t *testing.T) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			lines := instructions(t, name+".Containerfile")
			want := map[string]bool{
				"FROM scratch":            false,
				"COPY passwd group /etc/": false,
				"COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt": false,
				"COPY " + name + " /usr/local/bin/" + name:                    false,
				"USER " + nonRoot: false,
				`ENTRYPOINT ["/usr/local/bin/` + name + `"]`: false,
			}
			for _, l := range lines {
				if _, ok := want[l]; ok {
					want[l] = true
				}
				op, _, _ := strings.Cut(l, " ")
				switch op {
				case "FROM":
					if l != "FROM scratch" {
						t.Errorf("%q: only FROM scratch builds without a registry", l)
					}
				case "RUN", "ADD":
					t.Errorf("%q: an image from scratch has no shell; COPY from the staged context", l)
				case "LABEL":
					for _, k := range []string{"org.opencontainers.image.version=\"${VERSION}\"", "org.opencontainers.image.revision=\"${REVISION}\""} {
						if !strings.Contains(l, k) {
							t.Errorf("LABEL lacks %s", k)
						}
					}
				}
			}
			for l, seen := range want {
				if !seen {
					t.Errorf("missing %q", l)
				}
			}
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, "ENTRYPOINT") {
				t.Errorf("last instruction %q, want the ENTRYPOINT", last)
			}
		})
	}
	passwd, err := os.ReadFile("passwd")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(passwd, []byte(":x:65532:65532:")) {
		t.Errorf("passwd names no user 65532:65532:\n%s", passwd)
	}
}

// TestImages builds the static binaries and checks each is static and answers --version,
// then builds the images with the installed builder in throwaway storage, saves them and
// checks entrypoint, user, labels and files, and runs the binary extracted from the image.
// GATEWAY_TEST_IMAGES=static limits it to the binaries on a machine without a builder.
func TestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and images; skipped with -short")
	}
	bin := t.TempDir()
	runScript(t, nil, "binaries", bin)
	for _, name := range names {
		checkBinary(t, filepath.Join(bin, name), name, "")
	}
	if os.Getenv("GATEWAY_TEST_IMAGES") == "static" {
		t.Log("GATEWAY_TEST_IMAGES=static: images not built")
		return
	}
	if builder() == "" {
		t.Fatal("no image builder: install podman (.ci/run does) or set GATEWAY_TEST_IMAGES=static")
	}
	storage, save := t.TempDir(), t.TempDir()
	runScript(t, []string{"IMAGE_BIN_DIR=" + bin, "IMAGE_STORAGE=" + storage, "IMAGE_SAVE_DIR=" + save,
		"IMAGE_PREFIX=localhost/sekgate-test/", "IMAGE_TAG=test"})
	t.Cleanup(func() { removeImages(storage) })
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			img := readArchive(t, filepath.Join(save, name+".tar"))
			cfg := img.config
			if len(cfg.Entrypoint) != 1 || cfg.Entrypoint[0] != "/usr/local/bin/"+name {
				t.Errorf("entrypoint %q", cfg.Entrypoint)
			}
			if cfg.User != nonRoot {
				t.Errorf("user %q, want %s", cfg.User, nonRoot)
			}
			rev := cfg.Labels["org.opencontainers.image.revision"]
			if rev == "" || cfg.Labels["org.opencontainers.image.version"] != "test" {
				t.Errorf("labels %v", cfg.Labels)
			}
			if !bytes.Contains(img.files["etc/passwd"].body, []byte(":65532:65532:")) {
				t.Error("/etc/passwd has no user 65532")
			}
			if ca := img.files["etc/ssl/certs/ca-certificates.crt"].body; !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
				t.Error("no CA certificates in the image")
			}
			if name == "dataplane" {
				d, ok := img.files["var/lib/gateway"]
				if !ok || d.uid != 65532 || !env(cfg.Env, "GATEWAY_DATA_DIR=/var/lib/gateway") {
					t.Errorf("spool directory: present %v, owner %d, env %q", ok, d.uid, cfg.Env)
				}
			}
			f, ok := img.files["usr/local/bin/"+name]
			if !ok {
				t.Fatalf("no /usr/local/bin/%s in the image", name)
			}
			exe := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(exe, f.body, 0o755); err != nil {
				t.Fatal(err)
			}
			checkBinary(t, exe, name, rev)
		})
	}
}

// checkBinary asserts a static executable that prints "name ... revision rev".
func checkBinary(t *testing.T, path, name, rev string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s: dynamically linked (has an interpreter)", name)
		}
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", name, err, out)
	}
	want := name + " "
	if rev != "" {
		want = " revision " + rev
	}
	if !strings.HasPrefix(string(out), name+" ") || !strings.Contains(string(out), want) {
		t.Errorf("%s --version printed %q, want %q", name, out, want)
	}
}

func runScript(t *testing.T, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("./build.sh", args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build.sh %v: %v\n%s", args, err, out)
	}
}

// builder mirrors build.sh's choice: podman, buildah, or docker with a daemon.
func builder() string {
	if b := os.Getenv("IMAGE_BUILDER"); b != "" {
		return b
	}
	for _, b := range []string{"podman", "buildah", "docker"} {
		if _, err := exec.LookPath(b); err != nil {
			continue
		}
		if b == "docker" && exec.Command("docker", "info").Run() != nil {
			continue
		}
		return b
	}
	return ""
}

func removeImages(storage string) {
	switch b := builder(); b {
	case "podman", "buildah":
		_ = exec.Command(b, "--root", storage+"/root", "--runroot", storage+"/run", "rmi", "-a", "-f").Run()
	case "docker":
		for _, n := range names {
			_ = exec.Command("docker", "rmi", "-f", "localhost/sekgate-test/"+n+":test").Run()
		}
	}
}

// instructions reads a Containerfile's instructions, continuation lines joined.
func instructions(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			continue
		}
		cur.WriteString(l)
		out = append(out, strings.Join(strings.Fields(cur.String()), " "))
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no instructions", path)
	}
	return out
}

func env(vars []string, want string) bool {
	for _, v := range vars {
		if v == want {
			return true
		}
	}
	return false
}

type imageConfig struct {
	User       string            `json:"User"`
	Entrypoint []string          `json:"Entrypoint"`
	Env        []string          `json:"Env"`
	Labels     map[string]string `json:"Labels"`
}

type file struct {
	uid  int
	body []byte
}

type image struct {
	config imageConfig
	files  map[string]file // the flattened filesystem, later layers win
}

// readArchive reads a docker-archive (what `podman save` and `docker save` write).
func readArchive(t *testing.T, path string) image {
	t.Helper()
	entries := map[string][]byte{}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			entries[h.Name] = b
		}
	}
	var manifest []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(entries["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("%s: manifest.json: %v (%d images)", path, err, len(manifest))
	}
	var cfg struct {
		Config imageConfig `json:"config"`
	}
	if err := json.Unmarshal(entries[manifest[0].Config], &cfg); err != nil {
		t.Fatalf("%s: image config: %v", path, err)
	}
	img := image{config: cfg.Config, files: map[string]file{}}
	for _, l := range manifest[0].Layers {
		if err := readLayer(entries[l], img.files); err != nil {
			t.Fatalf("%s: layer %s: %v", path, l, err)
		}
	}
	return img
}

func readLayer(b []byte, files map[string]file) error {
	var r io.Reader = bytes.NewReader(b)
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		switch h.Typeflag {
		case tar.TypeReg:
			body, err := io.ReadAll(tr)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			files[name] = file{uid: h.Uid, body: body}
		case tar.TypeDir:
			files[name] = file{uid: h.Uid}
		}
	}
}
