import { describe, expect, it } from 'vitest';
import { ModelRegistry } from '../../../config/registry';
import type { ChannelConfig, GatewayConfig, ModelConfig } from '../../../config/schema';
import { parseUsd } from '../../../money/usd';
import { GatewayError } from '../../errors';
import { digitalHumanError, RULE_EIGHT_STATUS } from './digital-human-errors';
import { sameUpstreamAs } from './video-dh';
import { perSecondPlan as dhPlan } from './video-standard';
import { motionPrice } from './video-dh-motion';
import { followsRuleEight } from './videos';

const model = (fields: Partial<ModelConfig> & Pick<ModelConfig, 'id' | 'kind' | 'price'>): ModelConfig =>
  ({ owned_by: 't', aliases: [], callable: true, endpoint_type: null, capabilities: [], ...fields }) as ModelConfig;
const channel = (id: string, base_url: string) => ({ id, base_url }) as ChannelConfig;

describe('dhPlan: duration is the reservation basis, the settlement capped by it', () => {
  it('reserves price × duration by the millisecond, rounded up to the nano-dollar, capped billing', () => {
    expect(dhPlan(parseUsd('0.10'), 8)).toEqual({ reserved: parseUsd('0.80'), billing: { unit: 'millisecond', price: parseUsd('0.10'), per: 1000, cap: true }, basis: 8000 });
    // 0.000000003 USD/s × 0.5 s = 1.5 nano-dollars: rounded up.
    expect(dhPlan(3n, 0.5).reserved).toBe(2n);
    expect(dhPlan(parseUsd('0.07'), 2.25)).toMatchObject({ reserved: parseUsd('0.1575'), basis: 2250 });
  });
});

describe('motionPrice: the resolution tier of per_second', () => {
  const tiered = model({ id: 'dh-motion', kind: 'video', price: { per_second: { fast: '0.05', standard: '0.10', max: '0.25' } } });
  it('takes the tier price, a flat price for every tier, and null for a tier the model lacks or no price', () => {
    expect(motionPrice(tiered, 'fast')).toBe(parseUsd('0.05'));
    expect(motionPrice(tiered, 'max')).toBe(parseUsd('0.25'));
    expect(motionPrice(tiered, '1080p')).toBeNull();
    expect(motionPrice(model({ id: 'f', kind: 'video', price: { per_second: '0.07' } }), 'max')).toBe(parseUsd('0.07'));
    expect(motionPrice(model({ id: 'n', kind: 'video', price: {} }), 'standard')).toBeNull();
  });
});

describe('sameUpstreamAs: only channels of the upstream holding the references', () => {
  it('accepts every channel when nothing is held, else those of the same origin(s)', () => {
    expect(sameUpstreamAs([null, null])).toBeUndefined();
    const accept = sameUpstreamAs([channel('av', 'https://up.example/v1/avatars'), null])!;
    expect(accept(channel('v1', 'https://up.example/other'))).toBe(true);
    expect(accept(channel('v2', 'https://elsewhere.example/'))).toBe(false);
    expect(accept(channel('v3', 'http://up.example/'))).toBe(false);
    const both = sameUpstreamAs([channel('av', 'https://a.example'), channel('sp', 'https://b.example')])!;
    expect(both(channel('v', 'https://a.example'))).toBe(false);
  });
});

describe('Errors rule 8', () => {
  const registry = new ModelRegistry({
    models: [
      model({ id: 'dh-avatar', kind: 'video', price: { per_second: '0.1' }, video: { kind: 'dh-avatar', resolution_required: false, video_mode: false, token_billing: false } }),
      model({ id: 'vid', kind: 'video', price: { per_second: '0.1' } }),
      model({ id: 'dh-named-text', kind: 'text', price: { input: '1', output: '1' } }),
    ],
    channels: [],
  } as unknown as GatewayConfig);

  it('applies to every kind but standard, and to unknown ids by their dh-/clip- prefix', () => {
    expect(followsRuleEight(registry, 'dh-avatar')).toBe(true);
    expect(followsRuleEight(registry, 'vid')).toBe(false);
    expect(followsRuleEight(registry, 'dh-named-text')).toBe(false);
    expect(followsRuleEight(registry, 'dh-unknown')).toBe(true);
    expect(followsRuleEight(registry, 'clip-news')).toBe(true);
    expect(followsRuleEight(registry, 'seedance-x')).toBe(false);
  });

  it('changes only the status of model_not_found (404) and model_not_allowed (403)', () => {
    expect(digitalHumanError(new GatewayError('model_not_found', 'm'))).toMatchObject({ code: 'model_not_found', status: 404, message: 'm' });
    expect(digitalHumanError(new GatewayError('model_not_allowed', 'm'))).toMatchObject({ code: 'model_not_allowed', status: 403 });
    for (const code of ['invalid_request', 'quota_exceeded', 'no_channel_available', 'invalid_api_key'] as const) {
      const error = new GatewayError(code, 'x');
      expect(digitalHumanError(error)).toBe(error);
    }
  });

  it('gives a rejected call the rule\'s status (as rejectCall throws it), and the table\'s for other codes', () => {
    const rejected = (code: 'model_not_allowed' | 'invalid_request', message: string) => new GatewayError(code, message, {}, RULE_EIGHT_STATUS[code]);
    expect(rejected('model_not_allowed', 'no')).toMatchObject({ status: 403, code: 'model_not_allowed' });
    expect(rejected('invalid_request', 'bad')).toMatchObject({ status: 400 });
  });
});
