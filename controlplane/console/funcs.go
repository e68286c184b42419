package console

import (
	"encoding/json"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/snapshot"
)

func formatSEK(micro int64) string { return money.FormatSEK(micro) }

// displaySEK writes micro-SEK as SEK with thousands separators, as people read amounts,
// at the precision of money.FormatSEK (which rows use): 1,250.50, or 0.000034 for a
// request's price, never rounded to 0.00.
func displaySEK(micro int64) string {
	exact := money.FormatSEK(micro)
	sign, whole, frac := "", exact, ""
	if strings.HasPrefix(whole, "-") {
		sign, whole = "-", whole[1:]
	}
	if i := strings.IndexByte(whole, '.'); i >= 0 {
		whole, frac = whole[:i], whole[i:]
	}
	var b strings.Builder
	b.WriteString(sign)
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	b.WriteString(frac)
	return b.String()
}

// normalizeAmount turns an amount as people type it into the API's exact decimal: spaces
// (and no-break spaces) as thousands separators are dropped; a lone comma is the decimal
// mark (1 250,50); with both marks, the last is the decimal one (1,250.50 or 1.250,50).
func normalizeAmount(s string) string {
	s = strings.TrimSpace(s)
	s = strings.NewReplacer(" ", "", "\u00a0", "", "\u202f", "", "'", "").Replace(s)
	comma, dot := strings.LastIndexByte(s, ','), strings.LastIndexByte(s, '.')
	switch {
	case comma >= 0 && dot >= 0 && comma > dot: // 1.250,50
		s = strings.ReplaceAll(s[:comma], ".", "") + "." + s[comma+1:]
	case comma >= 0 && dot >= 0: // 1,250.50
		s = strings.ReplaceAll(s, ",", "")
	case comma >= 0 && strings.Count(s, ",") == 1: // 1250,50
		s = strings.Replace(s, ",", ".", 1)
	}
	return s
}

// oreSEK writes a price in öre as SEK with two decimals (exact: 100 öre = 1 SEK).
func oreSEK(ore int64) string {
	sign := ""
	if ore < 0 {
		sign, ore = "-", -ore
	}
	return sign + strconv.FormatInt(ore/100, 10) + "." + pad2(ore%100)
}

func pad2(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

var funcs = template.FuncMap{
	"pct":            pct,
	"perTime":        perTime,
	"mul100":         func(v float64) float64 { return v * 100 },
	"rate":           rate,
	"sek":            formatSEK,
	"sek2":           displaySEK,
	"deliveryStatus": deliveryStatus,
	"oreSEK":         oreSEK,
	// routeStates are the states a route may be given (shared/snapshot).
	"routeStates": func() []string { return snapshot.RouteStates },
	"ts": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04:05 UTC")
		case *time.Time:
			if v == nil {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04:05 UTC")
		}
		return "—"
	},
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return now.Sub(t).Round(time.Second).String()
	},
	"str": func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	},
	"join": strings.Join,
	"list": func(s ...string) []string { return s },
	"json": func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return ""
		}
		return string(b)
	},
	"raw": func(b json.RawMessage) string {
		if len(b) == 0 || string(b) == "null" {
			return ""
		}
		return string(b)
	},
	"neg": func(n int64) bool { return n < 0 },
	// limitsText and limitsSource show effective limits as gatewayctl does.
	"limitsText": func(e *adminapi.EffectiveLimits) string {
		if e == nil {
			return "—"
		}
		return adminapi.LimitsText(e.Limits)
	},
	"limitsSource": func(e *adminapi.EffectiveLimits) string {
		if e == nil {
			return ""
		}
		return limitSources[e.Source]
	},
	"can":  func(s *session, role string) bool { return s != nil && rank[s.Role] >= rank[role] },
	"plus": func(a, b int) int { return a + b },
	"ms":   func(n int64) string { return (time.Duration(n) * time.Millisecond).String() },
}

// limitSources say where effective limits come from.
var limitSources = map[string]string{"key": "the key's own", "account": "the account's", "default": "deployment default"}

var rank = map[string]int{"viewer": 1, "operator": 2, "admin": 3}
