// The OpenAI SDK's Responses stream helper on a reasoning model: it accumulates every
// event into a snapshot and throws on an event out of order ("missing content at index
// 0" for a delta of a part never added).
import OpenAI from 'openai';
import { env, report } from './common.mjs';

const client = new OpenAI({ baseURL: env('GATEWAY_BASE_URL'), apiKey: env('GATEWAY_API_KEY'), maxRetries: 0 });

report(async () => {
  const stream = client.responses.stream({ model: env('MODEL_REASONING'), input: 'Hej! scenario:reasoning' });
  const events = [];
  let text = '';
  stream.on('event', (e) => events.push(e.type));
  stream.on('response.output_text.delta', (e) => {
    text = e.snapshot;
  });
  const final = await stream.finalResponse();
  const reasoning = final.output
    .filter((it) => it.type === 'reasoning')
    .flatMap((it) => (it.content ?? []).map((c) => c.text))
    .join('');
  return { status: final.status, outputText: final.output_text, snapshotText: text, reasoning,
    itemTypes: final.output.map((it) => it.type), events };
});
