// LangChain's withStructuredOutput in JSON schema mode: ChatOpenAI sends response_format
// json_schema and parses the answer against the zod schema.
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { env, report } from './common.mjs';

const model = new ChatOpenAI({
  model: env('MODEL_CHAT'),
  apiKey: env('GATEWAY_API_KEY'),
  configuration: { baseURL: env('GATEWAY_BASE_URL') },
  maxRetries: 0,
});

const city = z.object({
  city: z.string().describe('the city'),
  population: z.number().int(),
  landmarks: z.array(z.string()).min(1),
  coastal: z.boolean(),
});

report(async () => {
  const structured = model.withStructuredOutput(city, { name: 'city', method: 'jsonSchema', strict: true });
  const object = await structured.invoke('Tell me about Göteborg.');
  return { object };
});
