package payments

import (
	"encoding/json"
	"testing"

	"github.com/stripe/stripe-go/v76"
)

// FuzzEventObjects feeds arbitrary data.object JSON to the readers of every handled event
// type: no panic, and an accepted object carries the IDs the handlers key on.
func FuzzEventObjects(f *testing.F) {
	f.Add(EventChargeRefunded, []byte(`{"id":"ch_1","object":"charge","amount":100,"amount_refunded":50,"currency":"sek","payment_intent":"pi_1"}`))
	f.Add(EventDisputeCreated, []byte(`{"id":"dp_1","object":"dispute","amount":100,"currency":"sek","charge":"ch_1","payment_intent":{"id":"pi_1"}}`))
	f.Add(EventCheckoutCompleted, []byte(`{"id":"cs_1","amount_total":100,"currency":"sek","payment_status":"paid","payment_intent":null}`))
	f.Add(EventChargeRefunded, []byte(`{"id":"ch_1","amount_refunded":-5}`))
	f.Add(EventCheckoutExpired, []byte(`[]`))
	f.Fuzz(func(t *testing.T, typ string, raw []byte) {
		ev := stripe.Event{ID: "evt_f", Type: stripe.EventType(typ), Data: &stripe.EventData{Raw: json.RawMessage(raw)}}
		switch typ {
		case EventChargeRefunded, EventDisputeCreated:
			ce, err := chargeEvent(ev)
			if err != nil {
				return
			}
			if typ == EventChargeRefunded && (ce.ChargeID == "" || ce.RefundedOre < 0) {
				t.Fatalf("accepted refund without charge or with a negative total: %+v", ce)
			}
			if typ == EventDisputeCreated && ce.DisputeID == "" {
				t.Fatalf("accepted dispute without id: %+v", ce)
			}
		default:
			_, _ = checkoutEvent(ev)
		}
	})
}
