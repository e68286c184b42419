package openapi

import "html/template"

// pageTemplate is the HTML reference: plain server-rendered markup with an inline style.
var pageTemplate = template.Must(template.New("reference").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} — API reference</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
code,pre{font:14px ui-monospace,monospace;background:#f4f4f4;padding:.1rem .3rem}
.op{border-top:1px solid #ddd;padding:.5rem 0}.m{font-weight:bold;display:inline-block;min-width:4rem}
.d{white-space:pre-wrap;margin:.25rem 0}.s{color:#666;font-size:14px}
</style></head><body>
<h1>{{.Title}}</h1>
<p>{{.Summary}} Interface version <code>{{.Version}}</code>.</p>
<p>Base URL: <code>{{.Base}}</code>. OpenAI-style SDKs use <code>{{.Base}}/v1</code>; Messages-style SDKs use <code>{{.Base}}</code>.
Send the key as <code>Authorization: Bearer &lt;API_KEY&gt;</code>. The machine-readable contract is <a href="/openapi.json">/openapi.json</a>.</p>
<div class="d">{{.Description}}</div>
<h2>Errors</h2>
<p>Every error is JSON: <code>{"error":{"type":…,"message":…,"code":…,"param":…}}</code>, with an <code>X-Request-Id</code> header; Messages-style errors also carry a top-level <code>"type":"error"</code>.</p>
{{range .Sections}}{{if .Operations}}
<h2 id="{{.Tag}}">{{.Tag}}</h2>{{if .Description}}<p>{{.Description}}</p>{{end}}
{{range .Operations}}<div class="op"><span class="m">{{.Method}}</span> <code>{{.Path}}</code> — {{.Summary}}{{if .Public}} <span class="s">(no key)</span>{{end}}
{{if .Description}}<div class="d">{{.Description}}</div>{{end}}<div class="s">Statuses: {{range $i, $s := .Statuses}}{{if $i}}, {{end}}{{$s}}{{end}}</div></div>
{{end}}{{end}}{{end}}
</body></html>
`))
