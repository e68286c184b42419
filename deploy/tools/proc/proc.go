// Package proc runs the gateway's binaries as child processes for harnesses (the
// benchmark, make chaos, the conformance suite): start with a log file, stop, kill, start
// again with the same arguments, wait for an HTTP answer.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process. Its methods are safe for concurrent use.
type Proc struct {
	// Name names the process (and its log file, <LogDir>/<Name>.log).
	Name string
	// Addr is the host:port it listens on.
	Addr string

	bin     string
	args    []string
	env     []string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Spec says how to run a process.
type Spec struct {
	Name string
	// Bin is the executable's path.
	Bin string
	// Addr is the host:port it will listen on (for URL).
	Addr string
	Args []string
	// Env is added to ChildEnv().
	Env []string
	// LogDir receives <Name>.log (appended to on restarts).
	LogDir string
}

// Start starts the process.
func Start(sp Spec) (*Proc, error) {
	p := &Proc{Name: sp.Name, Addr: sp.Addr, bin: sp.Bin, args: sp.Args, env: append(ChildEnv(), sp.Env...),
		logPath: filepath.Join(sp.LogDir, sp.Name+".log")}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Proc) start() error {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group, and killed if the harness dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.err = cmd, done, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

func (p *Proc) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.done
}

// PID returns the process ID.
func (p *Proc) PID() int {
	cmd, _ := p.current()
	return cmd.Process.Pid
}

// URL returns http://<Addr>.
func (p *Proc) URL() string { return "http://" + p.Addr }

// LogPath returns the log file's path.
func (p *Proc) LogPath() string { return p.logPath }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	_, done := p.current()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Err returns how the process ended (nil while it runs or after a clean exit).
func (p *Proc) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Kill sends SIGKILL and waits for the process to end.
func (p *Proc) Kill() {
	cmd, done := p.current()
	_ = cmd.Process.Kill()
	<-done
}

// Stop sends SIGTERM and waits up to grace for the process to end, then kills it.
func (p *Proc) Stop(grace time.Duration) {
	cmd, done := p.current()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Restart starts the process again with the same arguments; it must have ended.
func (p *Proc) Restart() error {
	if !p.Exited() {
		return errors.New(p.Name + " is still running")
	}
	return p.start()
}

// ChildEnv is the environment without GATEWAY_* variables, so a developer's settings (a
// simulator latency, another database) cannot leak into a harness's processes.
func ChildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GATEWAY_") {
			env = append(env, kv)
		}
	}
	return env
}

// FreeAddr returns a loopback address with a port that was free a moment ago and that
// it has not returned before in this process: the port is closed again before it is
// used, so the system may hand it out twice, and two listeners of one test on the same
// port would fail to start (or one would answer for the other).
func FreeAddr() (string, error) {
	handed.Lock()
	defer handed.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := l.Addr().String()
		l.Close()
		if !handed.m[addr] {
			handed.m[addr] = true
			return addr, nil
		}
	}
	return "", errors.New("no loopback port free that was not handed out before")
}

// handed are the addresses FreeAddr returned.
var handed = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// WaitHTTP polls method p.URL()+path (with the Authorization header auth, when set) until
// it answers want, the process exits, ctx ends or timeout passes.
func WaitHTTP(ctx context.Context, client *http.Client, p *Proc, method, path, auth string, want int, timeout time.Duration) error {
	err := WaitURL(ctx, client, method, p.URL()+path, auth, want, timeout, func() error {
		if p.Exited() {
			return fmt.Errorf("exited before answering (%v); see %s", p.Err(), p.logPath)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	return nil
}

// WaitURL polls method url (with the Authorization header auth, when set) every 100 ms
// until it answers want, ctx ends, timeout passes or gone (when not nil) returns an error:
// gone says whether a process the answer depends on has ended, so a crash fails the wait
// at once instead of after its timeout.
func WaitURL(ctx context.Context, client *http.Client, method, url, auth string, want int, timeout time.Duration, gone func() error) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		if gone != nil {
			if err := gone(); err != nil {
				return err
			}
		}
		req, err := http.NewRequestWithContext(ctx, method, url, nil)
		if err != nil {
			return err
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s did not answer %d (last: %s): %w", method, url, want, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s %s did not answer %d within %s (last: %s)", method, url, want, timeout, last)
}
