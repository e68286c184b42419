package console

import (
	"net/url"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

func TestDisplaySEK(t *testing.T) {
	for micro, want := range map[int64]string{
		1_250_500_000: "1,250.50", 1_250_499_889: "1,250.499889", 0: "0.00", 34: "0.000034", 5_000: "0.005",
		-12_500_000: "-12.50", -4_000: "-0.004", 1_234_567_890_000: "1,234,567.89", 100_000_000: "100.00",
		999_999: "0.999999", -1_000_000_000: "-1,000.00",
	} {
		if got := displaySEK(micro); got != want {
			t.Errorf("displaySEK(%d) = %q, want %q", micro, got, want)
		}
	}
}

func TestNormalizeAmount(t *testing.T) {
	for in, want := range map[string]string{
		"1 250,50": "1250.50", "1250.50": "1250.50", "1,250.50": "1250.50", "1.250,50": "1250.50",
		"1\u00a0250,5": "1250.5", "-12,50": "-12.50", " 100 ": "100", "1,2,3": "1,2,3",
	} {
		if got := normalizeAmount(in); got != want {
			t.Errorf("normalizeAmount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRecordsQueryDays(t *testing.T) {
	q := recordsQuery(url.Values{"from_day": {"2026-11-01"}, "to_day": {"2026-11-02"}, "result": {"ok"}, "bogus": {"x"}}, 50)
	if q.Get("from") != "2026-11-01T00:00:00Z" || q.Get("to") != "2026-11-03T00:00:00Z" || q.Get("result") != "ok" || q.Has("bogus") || q.Get("limit") != "50" {
		t.Fatalf("query %v", q)
	}
}

func TestFilterAccounts(t *testing.T) {
	a := []adminapi.Account{
		{ID: "a", Customer: "beta", Residency: "se", BalanceMicroSEK: 10_000_000},
		{ID: "b", Customer: "Alpha", Residency: "eu", BalanceMicroSEK: 500_000_000, Suspended: true},
		{ID: "c", Customer: "gamma", Residency: "se", BalanceMicroSEK: -1},
	}
	ids := func(l []adminapi.Account) string {
		s := ""
		for _, x := range l {
			s += x.ID
		}
		return s
	}
	for q, want := range map[string]string{
		"":                          "abc",
		"residency=se":              "ac",
		"status=suspended":          "b",
		"status=active&low=1":       "ac",
		"sort=customer":             "bac",
		"sort=-balance":             "bac",
		"sort=balance&residency=se": "ca",
	} {
		f, _ := url.ParseQuery(q)
		if got := ids(filterAccounts(a, f)); got != want {
			t.Errorf("%q: %s, want %s", q, got, want)
		}
	}
	if l := sortLinks(url.Values{"sort": {"balance"}, "after": {"x"}}); l["balance"] != "/console/accounts?sort=-balance" || l["customer"] != "/console/accounts?sort=customer" {
		t.Errorf("sort links %v", l)
	}
}

func TestGroupDebits(t *testing.T) {
	day := func(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }
	es := []adminapi.LedgerEntry{
		{ID: 6, Kind: "debit", AmountMicroSEK: -1, CreatedAt: day(27, 12)},
		{ID: 5, Kind: "debit", AmountMicroSEK: -2, CreatedAt: day(27, 11)},
		{ID: 4, Kind: "debit", AmountMicroSEK: -3, CreatedAt: day(27, 10)},
		{ID: 3, Kind: "credit", AmountMicroSEK: 100, CreatedAt: day(27, 9)},
		{ID: 2, Kind: "debit", AmountMicroSEK: -4, CreatedAt: day(26, 23)},
		{ID: 1, Kind: "debit", AmountMicroSEK: -5, CreatedAt: day(26, 22)},
	}
	rows := groupDebits(es)
	if len(rows) != 3 || rows[0].Entries != 3 || rows[0].AmountMicroSEK != -6 || rows[0].ID != 6 ||
		rows[1].Kind != "credit" || rows[2].Entries != 2 || rows[2].AmountMicroSEK != -9 || rows[0].Note != "usage of the day: 3 debits (entries 4 to 6)" {
		t.Fatalf("rows %+v", rows)
	}
}

func TestLiveFormats(t *testing.T) {
	one, small, half := 1.0, 0.0905, 0.25
	for _, tc := range []struct{ got, want string }{
		{perTime(2.5), "2.50/s"}, {perTime(1), "1.00/s"}, {perTime(0.1), "6.00/min"}, {perTime(0), "0.00/min"},
		{pct(nil), "—"}, {pct(&one), "1.0 ms"}, {pct(&small), "0.1 ms"}, {rate(nil), "—"}, {rate(&half), "25.0 %"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	big := 1234.4
	if got := pct(&big); got != "1234 ms" {
		t.Errorf("pct %q", got)
	}
}
