// The openai Node SDK, run as a user runs it, against a `moss-infer-hip serve` (issue 46).
// Usage: node sdk_calls.mjs SDK_MODULE BASE_URL API_KEY CASES
//   SDK_MODULE: the SDK built into one ES module (README.md says how); BASE_URL: http://127.0.0.1:PORT/v1;
//   CASES: "open" (a server without credentials: every call), "auth-ok" or "auth-bad" (a server with
//   --api-auth: the key matches its password, or does not).
// Prints one JSON object a line, {call, ok, ...what the SDK returned or threw}; exits 1 when any call
// did not do what a user of OpenAI's API expects of it.
const [sdkPath, baseURL, apiKey, cases] = process.argv.slice(2);
const { default: OpenAI } = await import(sdkPath);
// Node's own fetch, as the SDK uses by default, wrapped only to write down what the SDK sends and
// gets (its headers: the replay in hip/tests/server/openai_images_test.py copies them).
async function recordingFetch(url, init) {
  const response = await fetch(url, init);
  const headers = Object.fromEntries(new Headers(init?.headers).entries());
  if (headers.authorization) headers.authorization = headers.authorization.replace(/ .*/, ' <key>');
  console.log(JSON.stringify({ wire: `${init?.method ?? 'GET'} ${url}`, sent_headers: headers,
                               sent_body: typeof init?.body === 'string' ? init.body : undefined,
                               answer: response.status, answer_type: response.headers.get('content-type') }));
  return response;
}
const client = new OpenAI({ baseURL, apiKey, fetch: recordingFetch });
let failed = 0;

function record(call, ok, details) {
  if (!ok) failed += 1;
  console.log(JSON.stringify({ call, ok, ...details }));
}

// A PNG's width and height from its IHDR chunk, or null when the bytes are not a PNG.
function pngSize(bytes) {
  const signature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (bytes.length < 24 || signature.some((b, i) => bytes[i] !== b)) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return `${view.getUint32(16)}x${view.getUint32(20)}`;
}

// What the SDK's thrown error carries for a user: its class, message, status and OpenAI's fields.
function errorFields(e) {
  return { error_class: e?.constructor?.name, message: e?.message, status: e?.status, param: e?.param,
           type: e?.type, code: e?.code, request_id: e?.requestID ?? null };
}

async function generateB64(size) {
  const params = { prompt: 'a paper boat on a pond', size, response_format: 'b64_json' };
  const { data: image, response } = await client.images.generate(params).withResponse();
  const sizes = image.data.map((d) => pngSize(Buffer.from(d.b64_json, 'base64')));
  record(`images.generate b64_json ${size}`, sizes.length === 1 && sizes[0] === size,
         { params, http_status: response.status, created: image.created, keys: image.data.map((d) => Object.keys(d)),
           png_sizes: sizes, b64_chars: image.data[0]?.b64_json?.length });
}

async function generateUrl(params, downloadHeaders) {
  const image = await client.images.generate(params);
  const downloads = [];
  for (const d of image.data) {
    // As a user (or LibreChat's axios) downloads it: a plain GET of the URL, no SDK involved.
    const got = await fetch(d.url, { headers: downloadHeaders });
    const bytes = new Uint8Array(await got.arrayBuffer());
    downloads.push({ url: d.url, http_status: got.status, content_type: got.headers.get('content-type'),
                     png_size: pngSize(bytes), bytes: bytes.length });
  }
  const want = params.size ?? '32x32';
  record(`images.generate url ${JSON.stringify(params)}`,
         downloads.length === (params.n ?? 1) && downloads.every((d) => d.http_status === 200 && d.png_size === want),
         { params, created: image.created, keys: image.data.map((d) => Object.keys(d)), downloads });
}

async function listModels() {
  const ids = [];
  for await (const model of client.models.list()) ids.push({ id: model.id, object: model.object, owned_by: model.owned_by });
  record('models.list', ids.length === 1 && ids[0].id.includes('MOSS-Image'), { models: ids });
}

// One call that must throw: the SDK's error class and fields.
async function expectError(call, run, check) {
  try {
    const got = await run();
    record(call, false, { unexpected_success: JSON.stringify(got).slice(0, 200) });
  } catch (e) {
    const fields = errorFields(e);
    record(call, check(e, fields), fields);
  }
}

async function main() {
  if (cases === 'open') {
    await generateB64('32x32');
    await generateB64('64x64');
    await generateUrl({ prompt: 'a lighthouse at dusk', size: '32x32', response_format: 'url' });
    // No response_format (OpenAI's default is url), two images, DALL-E fields: LibreChat's call.
    await generateUrl({ prompt: 'a lighthouse at dusk', model: 'dall-e-3', quality: 'hd', style: 'vivid', n: 2,
                        size: '32x32' });
    await listModels();
    await expectError('images.generate bad size 30x30',
      () => client.images.generate({ prompt: 'x', size: '30x30', response_format: 'b64_json' }),
      (e, f) => e instanceof OpenAI.BadRequestError && f.status === 400 && f.param === 'size' &&
                f.type === 'invalid_request_error' && /^400 .*size/.test(f.message));
    // Calls of the SDK this server has no route for: the SDK's NotFoundError with the server's words.
    const notFound = (e, f) => e instanceof OpenAI.NotFoundError && f.type === 'not_found_error' &&
                               /^404 Not Found: .* is no route of this server/.test(f.message);
    await expectError('models.retrieve dall-e-3 (no such route)', () => client.models.retrieve('dall-e-3'), notFound);
    await expectError('chat.completions.create (no such route)',
      () => client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), notFound);
    await expectError('images.generate bad response_format gif',
      () => client.images.generate({ prompt: 'x', size: '32x32', response_format: 'gif' }),
      (e, f) => e instanceof OpenAI.BadRequestError && f.param === 'response_format');
  } else if (cases === 'auth-ok') {
    await generateB64('32x32');
    // The URL is downloaded as the SDK's user would, with the same credentials.
    await generateUrl({ prompt: 'a lighthouse at dusk', size: '32x32', response_format: 'url' },
                      { Authorization: `Bearer ${apiKey}` });
    await listModels();
    // Not judged: the URL fetched without credentials, as LibreChat's axios download does (OpenAI's
    // URLs are signed and need none; here every route but /health needs them: see README.md).
    const image = await client.images.generate({ prompt: 'a lighthouse at dusk', size: '32x32', response_format: 'url' });
    const plain = await fetch(image.data[0].url);
    console.log(JSON.stringify({ call: 'url downloaded without credentials (observation)', ok: null,
                                 http_status: plain.status, body: (await plain.text()).slice(0, 200) }));
  } else if (cases === 'auth-bad') {
    const authError = (e, f) => e instanceof OpenAI.AuthenticationError && f.status === 401 &&
                                typeof f.message === 'string' && f.message.includes('--api-auth') &&
                                !f.message.includes('"');  // the server's words, not a JSON dump
    await expectError('images.generate wrong key',
      () => client.images.generate({ prompt: 'x', size: '32x32', response_format: 'b64_json' }), authError);
    await expectError('models.list wrong key', () => client.models.list(), authError);
  } else {
    throw new Error(`unknown CASES ${cases}: open, auth-ok or auth-bad`);
  }
}

await main();
console.log(JSON.stringify({ summary: cases, failed }));
process.exit(failed ? 1 : 0);
