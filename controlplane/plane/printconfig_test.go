package plane

import (
	"io"
	"testing"

	"github.com/sekgate/gateway/internal/flagenv/flagenvtest"
)

// TestPrintConfigRedactsSecrets sets every setting of the control plane from each source
// and checks that --print-config shows no credential, and that every setting that holds one
// is typed as a secret.
func TestPrintConfigRedactsSecrets(t *testing.T) {
	flagenvtest.CheckPrintConfig(t, flagenvtest.Command{
		Prefix:  "GATEWAY_",
		FlagSet: FlagSet,
		Parse: func(w io.Writer, args []string, lookup func(string) (string, bool)) error {
			_, err := parseSettings(w, args, lookup)
			return err
		},
		Secrets: []string{"database-url", "migrate-database-url", "admin-token", "node-tokens",
			"stripe-secret-key", "stripe-webhook-secret", "test-box-token", "oidc-client-secret"},
	})
}
