/**
 * What real clients send: one conversation per protocol in its own wire format — system prompt,
 * an image, a turn with two parallel tool calls, their results, an answer and a follow-up —
 * and one non-streamed answer per protocol with text, tool calls and full usage.
 */
import type { ChatProtocol } from '../../src/config/schema';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const weatherSchema = { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city'] };
const timeSchema = { type: 'object', properties: { timezone: { type: 'string' } }, required: ['timezone'] };

export const REQUESTS: Record<ChatProtocol, Record<string, unknown>> = {
  'chat-completions': {
    model: 'gpt-4o',
    messages: [
      { role: 'system', content: 'You are a travel assistant.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Where is this? What is the weather and time there?' },
          { type: 'image_url', image_url: { url: 'https://upload.example.org/eiffel.jpg', detail: 'high' } },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
        ],
      },
      {
        role: 'assistant',
        content: 'That is Paris. Let me check.',
        tool_calls: [
          { id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' } },
          { id: 'call_t1', type: 'function', function: { name: 'get_time', arguments: '{"timezone":"Europe/Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_w1', content: '18°C, light rain' },
      { role: 'tool', tool_call_id: 'call_t1', content: '14:05' },
      { role: 'assistant', content: 'In Paris it is 18°C with light rain, and 14:05.' },
      { role: 'user', content: 'And tomorrow?' },
    ],
    tools: [
      { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: weatherSchema } },
      { type: 'function', function: { name: 'get_time', description: 'Local time in a time zone', parameters: timeSchema } },
    ],
    tool_choice: 'auto',
    parallel_tool_calls: true,
    temperature: 0.3,
    top_p: 0.9,
    stop: ['\n\nUser:'],
    max_completion_tokens: 512,
    response_format: { type: 'text' },
    stream: true,
    stream_options: { include_usage: true },
    seed: 7,
  },
  messages: {
    model: 'claude-sonnet-4-5',
    max_tokens: 512,
    system: [{ type: 'text', text: 'You are a travel assistant.', cache_control: { type: 'ephemeral' } }],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Where is this? What is the weather and time there?' },
          { type: 'image', source: { type: 'url', url: 'https://upload.example.org/eiffel.jpg' } },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'That is Paris. Let me check.' },
          { type: 'tool_use', id: 'toolu_w1', name: 'get_weather', input: { city: 'Paris', unit: 'celsius' } },
          { type: 'tool_use', id: 'toolu_t1', name: 'get_time', input: { timezone: 'Europe/Paris' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_w1', content: '18°C, light rain' },
          { type: 'tool_result', tool_use_id: 'toolu_t1', content: [{ type: 'text', text: '14:05' }] },
        ],
      },
      { role: 'assistant', content: 'In Paris it is 18°C with light rain, and 14:05.' },
      { role: 'user', content: 'And tomorrow?' },
    ],
    tools: [
      { name: 'get_weather', description: 'Current weather in a city', input_schema: weatherSchema },
      { name: 'get_time', description: 'Local time in a time zone', input_schema: timeSchema },
    ],
    tool_choice: { type: 'auto' },
    temperature: 0.3,
    top_p: 0.9,
    stop_sequences: ['\n\nUser:'],
    metadata: { user_id: 'u-42' },
    stream: true,
  },
  responses: {
    model: 'gpt-5',
    instructions: 'You are a travel assistant.',
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'Where is this? What is the weather and time there?' },
          { type: 'input_image', image_url: 'https://upload.example.org/eiffel.jpg', detail: 'high' },
          { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' },
        ],
      },
      { role: 'assistant', content: 'That is Paris. Let me check.' },
      { type: 'function_call', call_id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' },
      { type: 'function_call', call_id: 'call_t1', name: 'get_time', arguments: '{"timezone":"Europe/Paris"}' },
      { type: 'function_call_output', call_id: 'call_w1', output: '18°C, light rain' },
      { type: 'function_call_output', call_id: 'call_t1', output: '14:05' },
      { role: 'assistant', content: [{ type: 'output_text', text: 'In Paris it is 18°C with light rain, and 14:05.' }] },
      { role: 'user', content: 'And tomorrow?' },
    ],
    tools: [
      { type: 'function', name: 'get_weather', description: 'Current weather in a city', parameters: weatherSchema, strict: false },
      { type: 'function', name: 'get_time', description: 'Local time in a time zone', parameters: timeSchema, strict: false },
    ],
    tool_choice: 'auto',
    parallel_tool_calls: true,
    temperature: 0.3,
    top_p: 0.9,
    max_output_tokens: 512,
    reasoning: { effort: 'low' },
    store: false,
    stream: true,
  },
  'generate-content': {
    systemInstruction: { parts: [{ text: 'You are a travel assistant.' }] },
    contents: [
      {
        role: 'user',
        parts: [
          { text: 'Where is this? What is the weather and time there?' },
          { fileData: { mimeType: 'image/jpeg', fileUri: 'https://upload.example.org/eiffel.jpg' } },
          { inlineData: { mimeType: 'image/png', data: PNG } },
        ],
      },
      {
        role: 'model',
        parts: [
          { text: 'That is Paris. Let me check.' },
          { functionCall: { name: 'get_weather', args: { city: 'Paris', unit: 'celsius' } } },
          { functionCall: { name: 'get_time', args: { timezone: 'Europe/Paris' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_weather', response: { result: '18°C, light rain' } } },
          { functionResponse: { name: 'get_time', response: { result: '14:05' } } },
        ],
      },
      { role: 'model', parts: [{ text: 'In Paris it is 18°C with light rain, and 14:05.' }] },
      { role: 'user', parts: [{ text: 'And tomorrow?' }] },
    ],
    tools: [
      {
        functionDeclarations: [
          { name: 'get_weather', description: 'Current weather in a city', parametersJsonSchema: weatherSchema },
          { name: 'get_time', description: 'Local time in a time zone', parametersJsonSchema: timeSchema },
        ],
      },
    ],
    toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
    generationConfig: { temperature: 0.3, topP: 0.9, maxOutputTokens: 512, stopSequences: ['\n\nUser:'], thinkingConfig: { thinkingBudget: 2048 } },
    safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }],
  },
};

/** Fields of each request above that the canonical model does not carry. */
export const UNCARRIED: Record<ChatProtocol, readonly string[]> = {
  'chat-completions': ['seed'],
  messages: ['metadata', 'system.cache_control'],
  responses: ['store'],
  'generate-content': ['safetySettings'],
};

export const RESPONSES: Record<ChatProtocol, unknown> = {
  'chat-completions': {
    id: 'chatcmpl-abc123',
    object: 'chat.completion',
    created: 1741569952,
    model: 'gpt-4o-2024-08-06',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Checking both.',
          refusal: null,
          tool_calls: [
            { id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_t1', type: 'function', function: { name: 'get_time', arguments: '{"timezone":"Europe/Paris"}' } },
          ],
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 1200, completion_tokens: 48, total_tokens: 1248, prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 16, audio_tokens: 0 } },
    service_tier: 'default',
  },
  messages: {
    id: 'msg_01Aq9w938a90dw8q',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    content: [
      { type: 'thinking', thinking: 'The user wants weather and time.', signature: 'EqQBCgIYAh' },
      { type: 'text', text: 'Checking both.' },
      { type: 'tool_use', id: 'toolu_w1', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'toolu_t1', name: 'get_time', input: { timezone: 'Europe/Paris' } },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 176, cache_creation_input_tokens: 1000, cache_read_input_tokens: 24, output_tokens: 48 },
  },
  responses: {
    id: 'resp_67ccd2bed1ec8190b14f964abc054267',
    object: 'response',
    created_at: 1741476542,
    status: 'completed',
    model: 'gpt-5-2025-08-07',
    output: [
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'The user wants weather and time.' }] },
      { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Checking both.', annotations: [] }] },
      { type: 'function_call', id: 'fc_1', call_id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' },
      { type: 'function_call', id: 'fc_2', call_id: 'call_t1', name: 'get_time', arguments: '{"timezone":"Europe/Paris"}', status: 'completed' },
    ],
    usage: { input_tokens: 1200, input_tokens_details: { cached_tokens: 1024 }, output_tokens: 48, output_tokens_details: { reasoning_tokens: 16 }, total_tokens: 1248 },
  },
  'generate-content': {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [
            { text: 'The user wants weather and time.', thought: true },
            { text: 'Checking both.' },
            { functionCall: { name: 'get_weather', args: { city: 'Paris' } } },
            { functionCall: { name: 'get_time', args: { timezone: 'Europe/Paris' } } },
          ],
        },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: { promptTokenCount: 1200, candidatesTokenCount: 32, totalTokenCount: 1248, cachedContentTokenCount: 1024, thoughtsTokenCount: 16 },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'Wd3GaKjGNtGmnvgP0Yq7qAk',
  },
};
