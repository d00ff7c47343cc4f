package bedrock

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	smithy "github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cairnrun/cairn/shared/model/retry"
)

// Error codes by how retry.Run treats them, lower-cased: an HTTP error
// response names its code in x-amzn-ErrorType ("ThrottlingException"), an
// exception event in :exception-type ("throttlingException").
var (
	retryableCodes = codes("ThrottlingException", "TooManyRequestsException", "ServiceUnavailableException",
		"InternalServerException", "InternalFailure", "ModelNotReadyException", "ModelStreamErrorException",
		"ModelTimeoutException", "ExpiredTokenException", "RequestExpired")
	permanentCodes = codes("ValidationException", "AccessDeniedException", "ResourceNotFoundException",
		"ServiceQuotaExceededException", "UnrecognizedClientException",
		"InvalidSignatureException", "IncompleteSignature", "MissingAuthenticationToken")
)

// hints say what to do about the permanent failures a user can fix.
var hints = map[string]string{
	"accessdeniedexception": "access denied: enable access to this model in the Amazon Bedrock console (Model access) " +
		"for this account and region, and allow bedrock:InvokeModelWithResponseStream on it in the IAM policy of the runtime's role",
	"resourcenotfoundexception": "model not found in this region: check the model id, or use an inference profile id " +
		"(e.g. \"us.\" + the model id) for models served only through cross-region inference",
	"validationexception":         "Bedrock rejected the request",
	"unrecognizedclientexception": "AWS credentials rejected: check the IAM role or credentials the runtime runs with",
	"invalidsignatureexception":   "AWS request signature rejected: check the credentials and the clock",
	"servicequotaexceededexception": "the account's Bedrock quota for this model is exhausted: " +
		"request a quota increase in the Service Quotas console",
}

func codes(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[strings.ToLower(n)] = true
	}
	return m
}

// describe says which model failed and, for a failure the user can fix,
// how; the SDK's error (operation, status, request id, service message)
// stays wrapped.
func describe(model string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		if h, ok := hints[strings.ToLower(api.ErrorCode())]; ok {
			return fmt.Errorf("bedrock model %q: %s: %w", model, h, err)
		}
	}
	return fmt.Errorf("bedrock model %q: %w", model, err)
}

// classify tells retry.Run what an attempt's error means: throttling,
// overload, server errors and failed connections are retryable (honouring a
// Retry-After header), a request that can never succeed as sent is
// permanent, anything else is neither (the error is returned as is).
func classify(err error) retry.Failure {
	if errors.Is(err, errIncomplete) {
		return retry.Failure{Retryable: true}
	}
	if errors.Is(err, errNoCredentials) {
		return retry.Failure{Permanent: true}
	}
	var f retry.Failure
	var re *smithyhttp.ResponseError
	hasResponse := errors.As(err, &re) && re.Response != nil && re.Response.Response != nil
	if hasResponse {
		f = retry.HTTP(re.HTTPStatusCode(), re.Response.Header)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		code := strings.ToLower(api.ErrorCode())
		switch {
		case retryableCodes[code]:
			f.Retryable, f.Permanent = true, false
		case permanentCodes[code]:
			f.Retryable, f.Permanent = false, true
		case !hasResponse && api.ErrorFault() == smithy.FaultServer:
			f.Retryable = true
		}
		return f
	}
	if hasResponse {
		return f
	}
	if connectionFailed(err) {
		return retry.Failure{Retryable: true}
	}
	return f
}

// connectionFailed reports an error of the transport: the request never
// got a response, or the response body broke off.
func connectionFailed(err error) bool {
	var send *smithyhttp.RequestSendError
	var ne net.Error
	return errors.As(err, &send) || errors.As(err, &ne) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}
