package console

import (
	"encoding/json"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/sekgate/gateway/shared/money"
)

func formatSEK(micro int64) string { return money.FormatSEK(micro) }

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
	"sek":    formatSEK,
	"oreSEK": oreSEK,
	"ts": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04:05")
		case *time.Time:
			if v == nil {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04:05")
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
	"neg":  func(n int64) bool { return n < 0 },
	"can":  func(s *session, role string) bool { return s != nil && rank[s.Role] >= rank[role] },
	"plus": func(a, b int) int { return a + b },
	"ms":   func(n int64) string { return (time.Duration(n) * time.Millisecond).String() },
}

var rank = map[string]int{"viewer": 1, "operator": 2, "admin": 3}
