// Package pgtest starts a throwaway PostgreSQL cluster for tests from the system's
// PostgreSQL binaries and hands each test a fresh, empty database.
//
// Use it from a test package like this:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.NewDatabase(t) // fresh database, dropped when the test ends
//		...
//	}
//
// NewRoles gives the same fresh database under two roles, as deployments run it: the
// cluster's superuser owns the schema and runs the migrations, and the login role
// pgtest_runtime, a member of gateway_runtime (see controlplane/store migration 008),
// serves:
//
//	db := pgtest.NewRoles(t)
//	st, err := store.Open(ctx, store.Config{DatabaseURL: db.RuntimeURL, MigrateDatabaseURL: db.OwnerURL})
//
// The cluster is started once per test binary (on the first NewDatabase call) and stopped
// and removed by Main after all tests ran. When TEST_DATABASE_URL is set, no cluster is
// started: databases are created through that server instead (the role needs CREATEDB).
//
// When the tests run as root, initdb and the server run as the "postgres" system user
// (initdb refuses root), in a temporary directory owned by that user.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable that points the helper at an existing server.
const EnvURL = "TEST_DATABASE_URL"

// Cluster is a running PostgreSQL server the helper can create databases in.
type Cluster struct {
	// URL connects to the cluster's maintenance database as a superuser (or, with
	// TEST_DATABASE_URL, as the given role).
	URL string

	dir  string    // temporary directory holding the data directory; empty for external
	cmd  *exec.Cmd // the postgres process; nil for external
	done chan struct{}
	// launch starts the postgres process again (Restart); nil for external.
	launch func() (*exec.Cmd, chan struct{}, error)
	seq    atomic.Int64
	tag    string // prefix of database names, unique per process

	rolesOnce sync.Once
	rolesErr  error
}

// Runtime role names. gateway_runtime is the group the store's migrations grant to; the
// login role is the helper's own (a test credential on a throwaway cluster).
const (
	RuntimeGroup    = "gateway_runtime"
	RuntimeLogin    = "pgtest_runtime"
	runtimePassword = "pgtest_runtime"
)

// Roles are two URLs of one database.
type Roles struct {
	// OwnerURL connects as the schema owner (migrations: store.Config.MigrateDatabaseURL).
	OwnerURL string
	// RuntimeURL connects as RuntimeLogin, a member of gateway_runtime (serving:
	// store.Config.DatabaseURL).
	RuntimeURL string
}

var (
	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
)

// Main runs the package's tests and then stops the shared cluster, if one was started.
// Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		}
	}
	os.Exit(code)
}

// SkipShort skips the test under -short unless TEST_DATABASE_URL names a server, so
// that go test -short starts no PostgreSQL cluster. NewDatabase and NewRoles call it;
// tests that need a database before asking for one call it first.
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() && os.Getenv(EnvURL) == "" {
		t.Skip("pgtest: starts a PostgreSQL cluster; skipped with -short")
	}
}

// Shared returns the process-wide cluster, starting it on first use.
func Shared() (*Cluster, error) {
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		shared, sharedErr = Start(ctx)
	})
	return shared, sharedErr
}

// NewDatabase creates a fresh empty database on the shared cluster and returns its
// connection URL. The database is dropped when the test ends. It fails the test when no
// cluster can be started. Under -short (testing.Short) it skips the test instead, unless
// TEST_DATABASE_URL names a server: starting a cluster is not part of the quick loop.
func NewDatabase(t testing.TB) string {
	t.Helper()
	SkipShort(t)
	c, err := Shared()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	u, err := c.CreateDatabase(context.Background(), t.Name())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.DropDatabase(ctx, u); err != nil {
			t.Logf("pgtest: %v", err)
		}
	})
	return u
}

// NewRoles creates a fresh empty database like NewDatabase and returns its URLs for the
// owner and the runtime role.
func NewRoles(t testing.TB) Roles {
	t.Helper()
	owner := NewDatabase(t)
	c, err := Shared()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	rt, err := c.RuntimeURL(context.Background(), owner)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return Roles{OwnerURL: owner, RuntimeURL: rt}
}

// RuntimeURL returns dbURL with the runtime login role as its user, creating the role
// (and gateway_runtime) on the cluster the first time. With TEST_DATABASE_URL the role
// given there needs CREATEROLE.
func (c *Cluster) RuntimeURL(ctx context.Context, dbURL string) (string, error) {
	c.rolesOnce.Do(func() { c.rolesErr = c.createRoles(ctx) })
	if c.rolesErr != nil {
		return "", c.rolesErr
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", fmt.Errorf("parse database URL: %w", err)
	}
	u.User = url.UserPassword(RuntimeLogin, runtimePassword)
	return u.String(), nil
}

func (c *Cluster) createRoles(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redact(c.URL), err)
	}
	defer conn.Close(context.Background())
	// Another test process may create them at the same moment on a shared server.
	stmt := `DO $$
BEGIN
	BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '` + RuntimeGroup + `') THEN
			CREATE ROLE ` + RuntimeGroup + ` NOLOGIN;
		END IF;
	EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
	END;
	BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '` + RuntimeLogin + `') THEN
			CREATE ROLE ` + RuntimeLogin + ` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '` + runtimePassword + `' IN ROLE ` + RuntimeGroup + `;
		END IF;
	EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
	END;
END $$`
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("create runtime roles: %w", err)
	}
	return nil
}

// Start returns a cluster: the server named by TEST_DATABASE_URL when set, otherwise a new
// throwaway cluster in a temporary directory.
func Start(ctx context.Context) (*Cluster, error) {
	tag := fmt.Sprintf("pgtest_%d_%d_", os.Getpid(), time.Now().UnixNano()%1_000_000)
	if u := os.Getenv(EnvURL); u != "" {
		c := &Cluster{URL: u, tag: tag}
		if err := c.ping(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", EnvURL, err)
		}
		return c, nil
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a port may be taken between probe and bind
		c, err := startLocal(ctx, tag)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// binDir finds the directory holding initdb and postgres: PATH first, then the Debian
// layout /usr/lib/postgresql/<major>/bin (newest major first).
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return majorOf(matches[i]) > majorOf(matches[j]) })
	for _, m := range matches {
		dir := filepath.Dir(m)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("PostgreSQL binaries not found: no initdb and postgres on PATH or under /usr/lib/postgresql/*/bin (install the postgresql package or set " + EnvURL + ")")
}

func majorOf(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return n
}

// runAs returns the credential to run the server with: the postgres system user when the
// process is root, nil otherwise.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs the postgres system user to run initdb: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("postgres user has non-numeric uid/gid %q/%q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startLocal(ctx context.Context, tag string) (_ *Cluster, err error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	data := filepath.Join(dir, "data")
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("chown %s to postgres: %w", dir, err)
		}
	}
	env := append(os.Environ(), "LC_ALL=C", "LANG=C")
	attr := &syscall.SysProcAttr{Credential: cred, Setpgid: true}

	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--locale=C")
	initdb.Dir = dir
	initdb.Env = env
	initdb.SysProcAttr = attr
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}

	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	logPath := filepath.Join(dir, "postgres.log")
	launch := func() (*exec.Cmd, chan struct{}, error) {
		return launchServer(bin, data, dir, logPath, port, env, cred)
	}
	cmd, done, err := launch()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		URL:    fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		dir:    dir,
		cmd:    cmd,
		done:   done,
		tag:    tag,
		launch: launch,
	}
	if err := c.waitReady(ctx, logPath); err != nil {
		return nil, err
	}
	return c, nil
}

// launchServer starts postgres on the cluster in data (its socket in dir, its log
// appended to logPath) and returns it with a channel closed when it exits.
func launchServer(bin, data, dir, logPath string, port int, env []string, cred *syscall.Credential) (*exec.Cmd, chan struct{}, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("server log: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", data,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+dir,
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=300",
		"-c", "shared_buffers=32MB",
		"-c", "log_min_messages=warning",
	)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Pdeathsig stops the server if the test binary dies without running Main's cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return cmd, done, nil
}

// waitReady waits up to 30 s for the server to accept connections; on failure it stops it.
func (c *Cluster) waitReady(ctx context.Context, logPath string) error {
	cmd := c.cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		perr := c.ping(pctx)
		cancel()
		if perr == nil {
			return nil
		}
		select {
		case <-c.done:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited during start-up (%v):\n%s", cmd.ProcessState, log)
		case <-ctx.Done():
			c.Stop()
			return fmt.Errorf("postgres not ready: %w (last error: %v)", ctx.Err(), perr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			c.Stop()
			return fmt.Errorf("postgres not ready after 30s (last error: %v):\n%s", perr, log)
		}
	}
}

// Restart stops the server (fast shutdown: open sessions are ended, committed work is
// kept), keeps it down for down, and starts it again on the same port and data. For
// fault-injection harnesses; not for an external server.
func (c *Cluster) Restart(ctx context.Context, down time.Duration) error {
	if c.launch == nil {
		return errors.New("pgtest: cannot restart an external server")
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
	select {
	case <-time.After(down):
	case <-ctx.Done():
	}
	cmd, done, err := c.launch()
	if err != nil {
		return err
	}
	c.cmd, c.done = cmd, done
	return c.waitReady(ctx, filepath.Join(c.dir, "postgres.log"))
}

// PID returns the postmaster's process ID (its backends are its children), for harnesses
// that measure the server's CPU; 0 for an external server.
func (c *Cluster) PID() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

func (c *Cluster) ping(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// Stop shuts the server down (fast shutdown, then kill after 10 s) and removes its
// directory. For an external server it does nothing.
func (c *Cluster) Stop() error {
	if c.cmd == nil {
		return nil
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remove cluster directory: %w", err)
	}
	return nil
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// CreateDatabase creates a new empty database whose name derives from hint and returns
// its URL.
func (c *Cluster) CreateDatabase(ctx context.Context, hint string) (string, error) {
	name := unsafeName.ReplaceAllString(strings.ToLower(hint), "_")
	if len(name) > 30 {
		name = name[:30]
	}
	name = fmt.Sprintf("%s%d_%s", c.tag, c.seq.Add(1), name)
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", redact(c.URL), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return "", fmt.Errorf("parse cluster URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropDatabase drops a database made by CreateDatabase, disconnecting its sessions.
func (c *Cluster) DropDatabase(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return fmt.Errorf("parse database URL: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if !strings.HasPrefix(name, c.tag) {
		return fmt.Errorf("refusing to drop %q: not made by this helper", name)
	}
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redact(c.URL), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
