import { z } from 'zod';
import { ModelSchema } from '../../../config/schema';

/**
 * The non-stream answers of the four chat protocols, as each protocol's clients read them. An answer is
 * the upstream's own (passed through) or the translator's re-encoding of another protocol's, so these
 * name the fields a client relies on and keep the rest open (`looseObject`): a provider's extra field is
 * not a drift, a missing or mistyped named one is.
 */

const Int = z.number().int().nonnegative();

const ToolCall = z.looseObject({
  id: z.string(),
  type: z.string(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }).optional(),
});

export const ChatCompletion = z
  .looseObject({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.looseObject({
        index: Int,
        message: z.looseObject({
          role: z.literal('assistant'),
          content: z.string().nullable(),
          refusal: z.string().nullable().optional(),
          tool_calls: z.array(ToolCall).optional(),
        }),
        finish_reason: z.string().nullable(),
      }),
    ),
    usage: z
      .looseObject({ prompt_tokens: Int, completion_tokens: Int, total_tokens: Int })
      .optional()
      .describe('What the call was billed on.'),
  })
  .meta({ description: 'A chat completion (chat-completions protocol, `stream` absent or false).' });

const MessageBlock = z.union([
  z.looseObject({ type: z.literal('text'), text: z.string() }),
  z.looseObject({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.record(z.string(), z.unknown()) }),
  z.looseObject({ type: z.literal('thinking'), thinking: z.string() }),
  z.looseObject({ type: z.string() }).describe('Another content block, as the upstream gives it.'),
]);

export const Message = z
  .looseObject({
    id: z.string(),
    type: z.literal('message'),
    role: z.literal('assistant'),
    model: z.string(),
    content: z.array(MessageBlock),
    stop_reason: z.string().nullable(),
    stop_sequence: z.string().nullable().optional(),
    usage: z.looseObject({
      input_tokens: Int,
      output_tokens: Int,
      cache_creation_input_tokens: Int.nullable().optional(),
      cache_read_input_tokens: Int.nullable().optional(),
    }),
  })
  .meta({ description: 'A message (messages protocol, `stream` absent or false).' });

export const ResponseObject = z
  .looseObject({
    id: z.string(),
    object: z.literal('response'),
    created_at: z.number(),
    status: z.string().describe('`completed`, `incomplete`, `failed`, ...'),
    model: z.string(),
    output: z.array(
      z.union([
        z.looseObject({
          type: z.literal('message'),
          role: z.literal('assistant'),
          content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })),
        }),
        z.looseObject({ type: z.literal('function_call'), call_id: z.string(), name: z.string(), arguments: z.string() }),
        z.looseObject({ type: z.string() }).describe('Another output item, as the upstream gives it.'),
      ]),
    ),
    usage: z.looseObject({ input_tokens: Int, output_tokens: Int, total_tokens: Int }).nullable().optional(),
  })
  .meta({ description: 'A response object (responses protocol, `stream` absent or false).' });

export const GenerateContentResponse = z
  .looseObject({
    candidates: z.array(
      z.looseObject({
        content: z
          .looseObject({
            role: z.string().optional(),
            parts: z.array(z.looseObject({ text: z.string().optional(), functionCall: z.looseObject({ name: z.string() }).optional() })).optional(),
          })
          .optional(),
        finishReason: z.string().optional(),
        index: Int.optional(),
      }),
    ),
    usageMetadata: z.looseObject({ promptTokenCount: Int.optional(), candidatesTokenCount: Int.optional(), totalTokenCount: Int.optional() }).optional(),
    modelVersion: z.string().optional(),
    responseId: z.string().optional(),
  })
  .meta({ description: 'A generate-content answer (generate-content protocol, `:generateContent`).' });

/** Gemini's model list and model (`GET /v1beta/models`, `/v1beta/models/{model}`) and token count
 * (`:countTokens`), in Google's shape: ready for those routes' operations in `OPERATION_ANSWERS`. */
const GeminiModelEntry = z.looseObject({
  name: z.string().describe('`models/{id}`.'),
  displayName: z.string().optional(),
  description: z.string().optional(),
  inputTokenLimit: Int.optional(),
  outputTokenLimit: Int.optional(),
  supportedGenerationMethods: z.array(z.string()).optional(),
});
export const GeminiModel = GeminiModelEntry.meta({ description: 'A model this key may call, in the generate-content shape.' });
export const GeminiModelList = z
  .looseObject({ models: z.array(GeminiModelEntry), nextPageToken: z.string().optional() })
  .meta({ description: 'The models this key may call, in the generate-content shape.' });
export const GenerateTokenCount = z.looseObject({ totalTokens: Int }).meta({ description: 'The input tokens a generate-content request would take.' });

export const MessageTokenCount = z.object({ input_tokens: Int }).meta({ description: 'The input tokens a messages request would take.' });

const ModelEntry = z.object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() });

export const Model = ModelEntry.meta({ description: 'A model this key may call.' });
export const ModelList = z.object({ object: z.literal('list'), data: z.array(ModelEntry) }).meta({ description: 'The models this key may call.' });

/** A catalogue entry: the config's own field schemas (src/config/schema.ts), as the catalogue lists them. */
const catalogue = ModelSchema.shape;
export const PublicModels = z
  .object({
    models: z.array(
      z.object({
        id: z.string(),
        object: z.literal('model'),
        owned_by: z.string(),
        kind: catalogue.kind.unwrap(),
        aliases: z.array(z.string()),
        callable: z.boolean(),
        endpoint_type: z.string().nullable(),
        capabilities: catalogue.capabilities.unwrap(),
        price: catalogue.price.unwrap().describe('USD decimal strings: per 1M tokens for text, per unit for media.'),
        cache_write_multiplier: catalogue.cache_write_multiplier,
        cache_write_1h_multiplier: catalogue.cache_write_1h_multiplier,
        long_context: catalogue.long_context,
        discounts: z.array(z.looseObject({})).optional().describe('The promotions that apply (listed prices stay undiscounted).'),
        fixed_grid: catalogue.fixed_grid,
        context_window: z.number().int().nullable(),
        default_max_tokens: z.number().int().nullable(),
        supported_protocols: z.array(z.string()),
      }),
    ),
  })
  .meta({ description: 'The public catalogue: prices, capabilities and the protocols each model is served on.' });
