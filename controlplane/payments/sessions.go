package payments

import (
	"context"
	"errors"
	"strings"

	"github.com/sekgate/gateway/controlplane/store"
)

// KeyLivemode returns the mode of a secret or restricted API key: true for sk_live_ and
// rk_live_, false for sk_test_ and rk_test_. Any other key is an error, so a mistyped key
// never decides which events are accepted.
func KeyLivemode(key string) (bool, error) {
	switch {
	case key == "":
		return false, errors.New("the payment secret key is required (its mode decides which events are accepted)")
	case strings.HasPrefix(key, "sk_live_"), strings.HasPrefix(key, "rk_live_"):
		return true, nil
	case strings.HasPrefix(key, "sk_test_"), strings.HasPrefix(key, "rk_test_"):
		return false, nil
	}
	return false, errors.New("the payment secret key must start with sk_live_, sk_test_, rk_live_ or rk_test_")
}

// Sessions records checkout sessions. *store.Store implements it.
type Sessions interface {
	RecordCheckoutSession(ctx context.Context, s store.CheckoutSession) error
}

// Session is a checkout session the gateway created.
type Session = store.CheckoutSession
