package reqparse

import (
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Remote media and provider extensions. Parse does not refuse them itself, since whether a
// request may use them depends on the route, which is chosen after parsing: it records the
// first remote media part (Request.RemoteMedia) and every extension used
// (Request.Extensions, Request.ExtensionMask), and the server keeps only the eligible routes
// that allow them, refusing with 400 naming the param when none does.
//
// Remote media, in chat content parts (and in the chat-style messages vLLM accepts on
// /v1/embeddings): image_url, video_url or audio_url (a string or an object with url) that
// is not a data: URL; input_audio.data or file.file_data given as a URL (anything with a
// scheme other than data:); file.file_id and file.file_url (references the upstream would
// resolve). The parts are recognized by key, whatever their type, as vLLM does. On
// /v1/responses the same parts are refused on every route, as the interface refuses remote
// inputs there; Messages-style URL and file sources are refused likewise (messages.go).

// Extension is a provider extension a request uses.
type Extension struct {
	Index int    // position in snapshot.Extensions
	Param string // where the request uses it
}

// topExtKeys are the extension fields read at a body's top level, then chat_template_kwargs
// (whose chat_template member is the chat_template extension). Every endpoint's key list
// ends with them.
var topExtKeys = []string{snapshot.ExtPromptEmbeds, snapshot.ExtChatTemplate, snapshot.ExtKVTransferParams,
	snapshot.ExtLogitsProcessors, snapshot.ExtVLLMXArgs, snapshot.ExtMMProcessorKwargs, snapshot.ExtMediaIOKwargs,
	snapshot.ExtLoraPath, snapshot.ExtInputEmbeds, "chat_template_kwargs"}

const numTopExt = 10

// withExt returns keys followed by topExtKeys.
func withExt(keys []string) []string {
	return append(keys[:len(keys):len(keys)], topExtKeys...)
}

func (r *Request) addExt(name, param string) {
	i := snapshot.ExtensionIndex(name)
	if i < 0 || r.ExtensionMask&(1<<i) != 0 {
		return
	}
	r.ExtensionMask |= 1 << i
	r.Extensions = append(r.Extensions, Extension{Index: i, Param: param})
}

var chatTemplateKeys = []string{snapshot.ExtChatTemplate}

// topExtensions records the extensions among the top-level values f (topExtKeys order).
func (r *Request) topExtensions(f []string) *apierror.Error {
	for k, name := range topExtKeys[:numTopExt-1] {
		if given(f[k]) {
			r.addExt(name, name)
		}
	}
	if kw := f[numTopExt-1]; kindOf(kw) == kObject {
		var t [1]string
		if d := pick(kw, chatTemplateKeys, t[:]); d != "" {
			return dupKey("chat_template_kwargs.", d)
		}
		if given(t[0]) {
			r.addExt(snapshot.ExtChatTemplate, "chat_template_kwargs.chat_template")
		}
	}
	return nil
}

// mediaKeys are the keys of a content part that can carry media, in the order media reads
// them.
var mediaKeys = []string{"image_url", "video_url", "audio_url", "input_audio", "file",
	snapshot.ExtImageEmbeds, snapshot.ExtAudioEmbeds}

const numMediaKeys = 7

var (
	urlKeys   = []string{"url"}
	audioKeys = []string{"data", "url"}
	fileKeys  = []string{"file_id", "file_data", "file_url"}
)

// media inspects the media fields f (mediaKeys order) of the content part named by
// param() and returns the param of a remote reference among them ("" when none). It
// records the extensions the part uses.
func (r *Request) media(f []string, param func() string) (string, *apierror.Error) {
	var remote string
	for k := range 3 { // image_url, video_url, audio_url
		v := f[k]
		switch kindOf(v) {
		case kString:
			if remote == "" && !isDataURL(v) {
				remote = param() + "." + mediaKeys[k]
			}
		case kObject:
			var u [1]string
			if d := pick(v, urlKeys, u[:]); d != "" {
				return "", dupKey(param()+"."+mediaKeys[k]+".", d)
			}
			if remote == "" && given(u[0]) && !isDataURL(u[0]) {
				remote = param() + "." + mediaKeys[k] + ".url"
			}
		}
	}
	if kindOf(f[3]) == kObject {
		var a [2]string
		if d := pick(f[3], audioKeys, a[:]); d != "" {
			return "", dupKey(param()+".input_audio.", d)
		}
		if remote == "" && hasScheme(a[0]) {
			remote = param() + ".input_audio.data"
		}
		if remote == "" && given(a[1]) {
			remote = param() + ".input_audio.url"
		}
	}
	if kindOf(f[4]) == kObject {
		var ff [3]string
		if d := pick(f[4], fileKeys, ff[:]); d != "" {
			return "", dupKey(param()+".file.", d)
		}
		switch {
		case remote != "":
		case given(ff[0]):
			remote = param() + ".file.file_id"
		case hasScheme(ff[1]):
			remote = param() + ".file.file_data"
		case given(ff[2]):
			remote = param() + ".file.file_url"
		}
	}
	for k := 5; k < numMediaKeys; k++ {
		if given(f[k]) {
			r.addExt(mediaKeys[k], param()+"."+mediaKeys[k])
		}
	}
	return remote, nil
}

// hasScheme reports whether the string literal v starts with a URL scheme other than
// data: (base64 text never contains a colon).
func hasScheme(v string) bool {
	if kindOf(v) != kString || isDataURL(v) {
		return false
	}
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		switch {
		case c == ':':
			return i > 1
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', i > 1 && (c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return false
}

// RemoteMediaError is the refusal of a request whose remote media no eligible route allows.
func RemoteMediaError(param string) *apierror.Error {
	return bad(param, param+": remote media are not fetched for this model; send the content inline as a data: URL or base64")
}

// ExtensionError is the refusal of a request using an extension no eligible route allows.
func ExtensionError(e Extension) *apierror.Error {
	return bad(e.Param, e.Param+": the provider extension "+snapshot.Extensions[e.Index]+" is not allowed for this model")
}

// hasMedia reports whether any media field of a part is present (the common text-only part
// skips media).
func hasMedia(f []string) bool {
	for _, v := range f {
		if v != "" {
			return true
		}
	}
	return false
}
