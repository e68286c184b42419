package gatewayctl

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// limitsFlags adds --rps, --burst, --max-concurrent and --clear to cmd and returns a function
// that builds the "limits" value of a PATCH body from them: an object, or null with --clear.
// clearHelp says what --clear leaves in force for what the command changes.
func limitsFlags(cmd *cobra.Command, clearHelp string) func() (json.RawMessage, error) {
	var rps float64
	var burst, maxConcurrent int
	var clear, hold bool
	cmd.Flags().Float64Var(&rps, "rps", 0, "requests per second (0: no rate limit)")
	cmd.Flags().IntVar(&burst, "burst", 0, "requests allowed at once after a quiet period (0: one second's worth)")
	cmd.Flags().IntVar(&maxConcurrent, "max-concurrent", 0, "requests in flight, streams included (0: no cap)")
	cmd.Flags().BoolVar(&clear, "clear", false, clearHelp)
	cmd.Flags().BoolVar(&hold, "hold-max-price", false, "admit a request only when the balance covers its maximum price, held until it is priced (the balance becomes a cap on each node)")
	return func() (json.RawMessage, error) {
		set := cmd.Flags().Changed("rps") || cmd.Flags().Changed("burst") || cmd.Flags().Changed("max-concurrent") || cmd.Flags().Changed("hold-max-price")
		switch {
		case clear && set:
			return nil, fmt.Errorf("--clear cannot be combined with --rps, --burst, --max-concurrent or --hold-max-price")
		case clear:
			return json.RawMessage("null"), nil
		case !set:
			return nil, fmt.Errorf("give --rps, --burst, --max-concurrent and/or --hold-max-price, or --clear")
		case rps < 0 || burst < 0 || maxConcurrent < 0:
			return nil, fmt.Errorf("limits must not be negative")
		}
		return json.Marshal(struct {
			RPS           float64 `json:"requests_per_second,omitempty"`
			Burst         int     `json:"burst,omitempty"`
			MaxConcurrent int     `json:"max_concurrent,omitempty"`
			Hold          bool    `json:"hold_max_price,omitempty"`
		}{rps, burst, maxConcurrent, hold})
	}
}

// ownLimits writes an account's or key's own limits, "-" when it has none.
func ownLimits(l *snapshot.Limits) string {
	if l == nil {
		return "-"
	}
	return adminapi.LimitsText(*l)
}

// effective splits effective limits into the value and where it comes from, "-" for an
// answer without them.
func effective(e *adminapi.EffectiveLimits) (value, source string) {
	if e == nil {
		return "-", "-"
	}
	return adminapi.LimitsText(e.Limits), e.Source
}
