package sse

// Event names and sentinels of the streaming protocols the gateway relays and translates,
// named once for the stream's reader (dataplane/proxy), the relay (dataplane/server) and the
// translators (dataplane/translate).
const (
	// DoneData is the data of the last event of a chat or text completions stream.
	DoneData = "[DONE]"

	// Messages-style events.
	MessageStart      = "message_start"
	MessageDelta      = "message_delta"
	MessageStop       = "message_stop" // the stream's last event
	ContentBlockDelta = "content_block_delta"

	// Responses-style events: a stream ends with one of the three response.* events below;
	// only response.completed is a success.
	ResponseCompleted  = "response.completed"
	ResponseFailed     = "response.failed"
	ResponseIncomplete = "response.incomplete"
	// DeltaSuffix ends the name of every Responses-style event that carries generated
	// output (response.output_text.delta, ...).
	DeltaSuffix = ".delta"
)
