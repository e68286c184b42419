// The Vercel AI SDK's generateObject through the OpenAI provider's chat model: the schema
// travels as response_format json_schema and the SDK parses and validates the answer.
import { generateObject } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';
import { env, report } from './common.mjs';

const openai = createOpenAI({ baseURL: env('GATEWAY_BASE_URL'), apiKey: env('GATEWAY_API_KEY') });

const recipe = z.object({
  name: z.string(),
  servings: z.number().int().min(1).max(12),
  vegetarian: z.boolean(),
  course: z.enum(['starter', 'main', 'dessert']),
  ingredients: z.array(z.object({ item: z.string(), grams: z.number() })).min(1),
  steps: z.array(z.string()).min(2),
});

report(async () => {
  const { object, finishReason, usage } = await generateObject({
    model: openai.chat(env('MODEL_CHAT')),
    schema: recipe,
    schemaName: 'recipe',
    prompt: 'A recipe for kanelbullar.',
    maxRetries: 0,
  });
  return { object, finishReason, outputTokens: usage.outputTokens };
});
