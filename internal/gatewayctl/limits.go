package gatewayctl

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

// limitsFlags adds --rps, --burst, --max-concurrent and --clear to cmd and returns a function
// that builds the "limits" value of a PATCH body from them: an object, or null with --clear.
func limitsFlags(cmd *cobra.Command) func() (json.RawMessage, error) {
	var rps float64
	var burst, maxConcurrent int
	var clear bool
	cmd.Flags().Float64Var(&rps, "rps", 0, "requests per second (0: no rate limit)")
	cmd.Flags().IntVar(&burst, "burst", 0, "requests allowed at once after a quiet period (0: one second's worth)")
	cmd.Flags().IntVar(&maxConcurrent, "max-concurrent", 0, "requests in flight, streams included (0: no cap)")
	cmd.Flags().BoolVar(&clear, "clear", false, "remove the limits (accounts fall back to the deployment defaults)")
	return func() (json.RawMessage, error) {
		set := cmd.Flags().Changed("rps") || cmd.Flags().Changed("burst") || cmd.Flags().Changed("max-concurrent")
		switch {
		case clear && set:
			return nil, fmt.Errorf("--clear cannot be combined with --rps, --burst or --max-concurrent")
		case clear:
			return json.RawMessage("null"), nil
		case !set:
			return nil, fmt.Errorf("give --rps, --burst and/or --max-concurrent, or --clear")
		case rps < 0 || burst < 0 || maxConcurrent < 0:
			return nil, fmt.Errorf("limits must not be negative")
		}
		return json.Marshal(struct {
			RPS           float64 `json:"requests_per_second,omitempty"`
			Burst         int     `json:"burst,omitempty"`
			MaxConcurrent int     `json:"max_concurrent,omitempty"`
		}{rps, burst, maxConcurrent})
	}
}
