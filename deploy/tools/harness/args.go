package harness

// ControlPlane is a control plane's command line. Empty fields are left out, so a harness
// can give a setting through the environment instead.
type ControlPlane struct {
	Listen             string // --listen: the node-facing listener
	AdminListen        string // --admin-listen
	DatabaseURL        string // --database-url: the runtime role's
	MigrateDatabaseURL string // --migrate-database-url: the schema owner's
	AdminToken         string // --admin-token
	NodeTokens         string // --node-tokens
	SigningKeyFile     string // --snapshot-signing-key-file
	LogLevel           string // --log-level
	OpsListen          string // --ops-listen: metrics, probes and the profiler
}

// Args returns the flags, then extra.
func (c ControlPlane) Args(extra ...string) []string {
	return appendFlags(nil, extra,
		"--listen", c.Listen, "--admin-listen", c.AdminListen,
		"--database-url", c.DatabaseURL, "--migrate-database-url", c.MigrateDatabaseURL,
		"--admin-token", c.AdminToken, "--node-tokens", c.NodeTokens,
		"--snapshot-signing-key-file", c.SigningKeyFile, "--log-level", c.LogLevel, "--ops-listen", c.OpsListen)
}

// DataPlane is a data plane's command line. Empty fields are left out.
type DataPlane struct {
	Listen          string // --listen
	ControlPlaneURL string // --control-plane-url
	NodeToken       string // --node-token
	PublicKeyFile   string // --snapshot-public-key-file
	NodeID          string // --node-id
	DataDir         string // --data-dir
	LogLevel        string // --log-level
}

// Args returns the flags, then extra.
func (d DataPlane) Args(extra ...string) []string {
	return appendFlags(nil, extra,
		"--listen", d.Listen, "--control-plane-url", d.ControlPlaneURL,
		"--node-token", d.NodeToken, "--snapshot-public-key-file", d.PublicKeyFile,
		"--node-id", d.NodeID, "--data-dir", d.DataDir, "--log-level", d.LogLevel)
}

// SimulatorArgs returns a provider simulator's command line: listen address, name and
// every behaviour knob at zero (no latency, no pacing, no errors), given as flags so no
// GATEWAY_SIM_* variable of the environment changes it; then extra.
func SimulatorArgs(listen, name string, extra ...string) []string {
	return append([]string{"--listen", listen, "--name", name,
		"--latency-ms", "0", "--ttft-ms", "0", "--tokens-per-second", "0", "--error-rate", "0", "--status", "0"}, extra...)
}

// appendFlags appends each flag/value pair whose value is not empty, then extra.
func appendFlags(args, extra []string, pairs ...string) []string {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			args = append(args, pairs[i], pairs[i+1])
		}
	}
	return append(args, extra...)
}
