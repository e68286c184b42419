package openapi

import (
	"bytes"
	"html/template"
)

// Landing is the page GET / shows a person: what the gateway is, how to point an SDK at
// base (the gateway's public base URL), where to read more.
func Landing(base string) ([]byte, error) {
	var b bytes.Buffer
	if err := landingTemplate.Execute(&b, base); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var landingTemplate = template.Must(template.New("landing").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Inference gateway</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222}code{font:14px ui-monospace,monospace;background:#f4f4f4;padding:.1rem .3rem}</style>
</head><body>
<h1>Inference gateway</h1>
<p>This is an API for open-weight language models, run on infrastructure approved for each customer account under its residency policy. It speaks the OpenAI-style chat, completions, embeddings and Responses protocols and the Messages protocol.</p>
<p>Point OpenAI SDKs at <code>{{.}}/v1</code> and Messages (Anthropic) SDKs at <code>{{.}}</code>, with the API key from the console as <code>Authorization: Bearer &lt;API_KEY&gt;</code>.</p>
<ul>
<li><a href="/docs">Reference</a>: every endpoint, its errors and limits.</li>
<li><a href="/openapi.json">openapi.json</a>: the machine-readable interface.</li>
<li><a href="/healthz">/healthz</a>: health of this gateway.</li>
</ul>
</body></html>
`))
