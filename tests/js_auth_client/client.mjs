// The official A2A JavaScript SDK (@a2a-js/sdk) as a client of a2a-toolcall, authenticating
// the way the agent card says: the scheme is read from card.securitySchemes (an apiKey in a
// header, or HTTP Bearer) and the credential is attached by the SDK's own auth hook,
// createAuthenticatingFetchWithRetry with an AuthenticationHandler, given to the JSON-RPC
// transport as its fetch.
//
// Input, as JSON on stdin:
//   {"baseUrl": "http://127.0.0.1:8000",
//    "protocolVersion": "1.0" | "0.3",   // the only interface left on the card
//    "credential": {"kind": "apiKey" | "bearer", "value": "..."},
//    "otherCredential": {"kind": ..., "value": ...},  // a second user
//    "text": "what is 6*7"}
//
// Output: one JSON object a line, "step" saying what it is:
//   scheme        the scheme chosen from the card (name, header), never the credential
//   event         one StreamResponse of the streamed message, as the SDK gives it
//   getTask       the task, read back by its owner
//   listTasks     the owner's tasks in the task's context (1.0 only: 0.3 has no ListTasks)
//   refused       a call that failed: who, what, the SDK's error class and code
//   requests      every HTTP request made: who, JSON-RPC method, status, header names
// Exits 0 when every step ran (refusals are expected results, reported as such).

import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  createAuthenticatingFetchWithRetry,
} from '@a2a-js/sdk/client';
import { A2AError, TaskNotFoundError } from '@a2a-js/sdk/errors';

const ROLE_USER = 1; // Role.ROLE_USER
const TASK_STATE_UNSPECIFIED = 0; // TaskState.TASK_STATE_UNSPECIFIED: any state

function emit(step, fields) {
  process.stdout.write(`${JSON.stringify({ step, ...fields })}\n`);
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

// The card's scheme for a credential of this kind, in the order of its securityRequirements.
function chooseScheme(card, kind) {
  const schemes = card.securitySchemes ?? {};
  for (const requirement of card.securityRequirements ?? []) {
    for (const name of Object.keys(requirement.schemes ?? {})) {
      const scheme = schemes[name]?.scheme;
      if (!scheme) continue;
      if (
        kind === 'apiKey' &&
        scheme.$case === 'apiKeySecurityScheme' &&
        scheme.value.location.toLowerCase() === 'header'
      ) {
        return { name, header: scheme.value.name, prefix: '' };
      }
      if (
        kind === 'bearer' &&
        scheme.$case === 'httpAuthSecurityScheme' &&
        scheme.value.scheme.toLowerCase() === 'bearer'
      ) {
        return { name, header: 'Authorization', prefix: 'Bearer ' };
      }
    }
  }
  throw new Error(
    `the card advertises no scheme for a ${kind} credential: ${JSON.stringify(schemes)}`,
  );
}

// The SDK's AuthenticationHandler: the headers the chosen scheme asks for (none without a
// credential); no retry, the credential is not one that can be refreshed.
function authenticationHandler(card, credential) {
  let headers = {};
  if (credential) {
    const chosen = chooseScheme(card, credential.kind);
    headers = { [chosen.header]: chosen.prefix + credential.value };
  }
  return {
    headers: async () => headers,
    shouldRetryWithHeaders: async () => undefined,
  };
}

const requests = [];

// Under the SDK's authenticating fetch: records what actually went over the wire (header
// names and the Authorization scheme word, never a credential).
function recordingFetch(who) {
  return async (url, init) => {
    const headers = new Headers(init?.headers);
    let method;
    try {
      method = JSON.parse(init?.body ?? 'null')?.method;
    } catch {
      method = undefined;
    }
    const response = await fetch(url, init);
    requests.push({
      who,
      method,
      status: response.status,
      headers: [...headers.keys()].sort(),
      authorization: (headers.get('authorization') ?? '').split(' ')[0],
    });
    return response;
  };
}

async function clientFor(card, credential, who) {
  const fetchImpl = createAuthenticatingFetchWithRetry(
    recordingFetch(who),
    authenticationHandler(card, credential),
  );
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
    }),
  );
  return factory.createFromAgentCard(card);
}

function describe(error) {
  return {
    error: error?.constructor?.name ?? typeof error,
    a2aError: error instanceof A2AError,
    taskNotFound: error instanceof TaskNotFoundError,
    code: error?.envelopeCode ?? null,
    message: String(error?.message ?? error),
  };
}

async function refused(who, what, call) {
  try {
    const result = await call();
    emit('refused', { who, what, error: null, result });
  } catch (error) {
    emit('refused', { who, what, ...describe(error) });
  }
}

async function drain(stream) {
  const events = [];
  for await (const event of stream) events.push(event);
  return events;
}

// Requests in full, as the SDK's types declare them (its JSON encoders expect every field).
function userMessage(text) {
  return {
    tenant: '',
    message: {
      messageId: crypto.randomUUID(),
      contextId: '',
      taskId: '',
      role: ROLE_USER,
      parts: [
        { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' },
      ],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}

const byId = (id) => ({ tenant: '', id });

const input = await readStdin();
// The card is public: fetched without credentials, by the SDK's resolver.
const card = await new DefaultAgentCardResolver().resolve(input.baseUrl);
card.supportedInterfaces = card.supportedInterfaces.filter(
  (i) => i.protocolVersion === input.protocolVersion,
);
const chosen = chooseScheme(card, input.credential.kind);
emit('scheme', {
  name: chosen.name,
  header: chosen.header,
  protocolVersion: card.supportedInterfaces[0]?.protocolVersion,
});

const owner = await clientFor(card, input.credential, 'owner');
let task;
for await (const event of owner.sendMessageStream(userMessage(input.text ?? 'what is 6*7'))) {
  emit('event', { event });
  if (event.payload?.$case === 'task') task = event.payload.value;
}
emit('getTask', { task: await owner.getTask(byId(task.id)) });
if (input.protocolVersion !== '0.3') {
  emit('listTasks', { response: await owner.listTasks({
      tenant: '',
      contextId: task.contextId,
      status: TASK_STATE_UNSPECIFIED,
      pageToken: '',
      statusTimestampAfter: undefined,
    }) });
}

const anonymous = await clientFor(card, null, 'anonymous');
await refused('anonymous', 'getTask', () => anonymous.getTask(byId(task.id)));
await refused('anonymous', 'sendMessageStream', () =>
  drain(anonymous.sendMessageStream(userMessage('what is 1+1'))),
);

const other = await clientFor(card, input.otherCredential, 'other');
await refused('other', 'getTask', () => other.getTask(byId(task.id)));
await refused('other', 'resubscribeTask', () => drain(other.resubscribeTask(byId(task.id))));
await refused('other', 'cancelTask', () => other.cancelTask({ ...byId(task.id), metadata: undefined }));

emit('requests', { requests });
