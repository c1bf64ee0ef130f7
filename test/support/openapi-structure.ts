/**
 * The structure of an OpenAPI 3.1 document, as a JSON Schema (2020-12), written from the OpenAPI
 * Specification 3.1 for the objects the gateway's document uses: every object closed to unknown
 * fields except `x-` extensions, the required fields of each, path parameters required, response
 * keys a status, a status range or `default`, security schemes with the fields their type needs.
 * The rules a JSON Schema cannot state (unique operation ids, path templates matched by path
 * parameters, references that resolve) are checked by the test itself.
 */

const string = { type: 'string' } as const;
const extensions = { '^x-': true } as const;
const closed = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
  patternProperties: extensions,
  additionalProperties: false,
});

export const OPENAPI_31_STRUCTURE = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  ...closed(
    {
      openapi: { type: 'string', pattern: '^3\\.1\\.\\d+(-.+)?$' },
      info: { $ref: '#/$defs/info' },
      jsonSchemaDialect: string,
      servers: { type: 'array', items: { $ref: '#/$defs/server' } },
      paths: { $ref: '#/$defs/paths' },
      components: { $ref: '#/$defs/components' },
      security: { type: 'array', items: { $ref: '#/$defs/securityRequirement' } },
      tags: { type: 'array', items: { $ref: '#/$defs/tag' } },
    },
    ['openapi', 'info', 'paths'],
  ),
  $defs: {
    info: closed({ title: string, summary: string, description: string, version: string }, ['title', 'version']),
    server: closed({ url: string, description: string }, ['url']),
    paths: {
      type: 'object',
      propertyNames: { pattern: '^/' },
      additionalProperties: { $ref: '#/$defs/pathItem' },
    },
    pathItem: {
      type: 'object',
      properties: { summary: string, description: string, parameters: { type: 'array', items: { $ref: '#/$defs/parameter' } } },
      patternProperties: { '^(get|put|post|delete|options|head|patch|trace)$': { $ref: '#/$defs/operation' }, ...extensions },
      additionalProperties: false,
    },
    operation: closed(
      {
        tags: { type: 'array', items: string },
        summary: string,
        description: string,
        operationId: string,
        parameters: { type: 'array', items: { $ref: '#/$defs/parameter' } },
        requestBody: { $ref: '#/$defs/requestBody' },
        responses: { $ref: '#/$defs/responses' },
        deprecated: { type: 'boolean' },
        security: { type: 'array', items: { $ref: '#/$defs/securityRequirement' } },
      },
      ['responses'],
    ),
    parameter: {
      ...closed(
        {
          name: string,
          in: { enum: ['query', 'header', 'path', 'cookie'] },
          description: string,
          required: { type: 'boolean' },
          deprecated: { type: 'boolean' },
          schema: { $ref: '#/$defs/schema' },
          style: string,
          explode: { type: 'boolean' },
        },
        ['name', 'in', 'schema'],
      ),
      // A path parameter is always required.
      if: { properties: { in: { const: 'path' } } },
      then: { properties: { required: { const: true } }, required: ['required'] },
    },
    requestBody: closed({ description: string, content: { $ref: '#/$defs/content' }, required: { type: 'boolean' } }, ['content']),
    content: {
      type: 'object',
      minProperties: 1,
      propertyNames: { pattern: '^(\\*/\\*|[a-z]+/(\\*|[a-z0-9.+-]+))$' },
      additionalProperties: { $ref: '#/$defs/mediaType' },
    },
    mediaType: closed({ schema: { $ref: '#/$defs/schema' }, example: true, examples: { type: 'object' } }),
    responses: {
      type: 'object',
      minProperties: 1,
      propertyNames: { pattern: '^([1-5](?:[0-9]{2}|XX)|default|x-.*)$' },
      additionalProperties: { $ref: '#/$defs/response' },
    },
    response: closed(
      {
        description: string,
        headers: { type: 'object', additionalProperties: { $ref: '#/$defs/header' } },
        content: { $ref: '#/$defs/content' },
      },
      ['description'],
    ),
    header: closed({ description: string, required: { type: 'boolean' }, schema: { $ref: '#/$defs/schema' } }, ['schema']),
    components: closed({
      schemas: { type: 'object', propertyNames: { pattern: '^[a-zA-Z0-9._-]+$' }, additionalProperties: { $ref: '#/$defs/schema' } },
      securitySchemes: { type: 'object', propertyNames: { pattern: '^[a-zA-Z0-9._-]+$' }, additionalProperties: { $ref: '#/$defs/securityScheme' } },
    }),
    securityScheme: {
      ...closed(
        {
          type: { enum: ['apiKey', 'http', 'mutualTLS', 'oauth2', 'openIdConnect'] },
          description: string,
          name: string,
          in: { enum: ['query', 'header', 'cookie'] },
          scheme: string,
          bearerFormat: string,
        },
        ['type'],
      ),
      allOf: [
        { if: { properties: { type: { const: 'apiKey' } } }, then: { required: ['name', 'in'] } },
        { if: { properties: { type: { const: 'http' } } }, then: { required: ['scheme'] } },
      ],
    },
    securityRequirement: { type: 'object', additionalProperties: { type: 'array', items: string } },
    tag: closed({ name: string, description: string }, ['name']),
    // A Schema Object: checked on its own as JSON Schema 2020-12 by the test.
    schema: { type: ['object', 'boolean'] },
  },
} as const;
